import { t } from 'elysia'

export const liveness = t.Object({
  status: t.Literal('ok'),
  uptimeSeconds: t.Number({ description: 'Seconds since the process started' }),
})

export const readiness = t.Object({
  status: t.Union([t.Literal('ready'), t.Literal('not_ready')]),
  checks: t.Record(t.String(), t.String(), { description: 'Each dependency with `ok` or what is wrong' }),
})
