import { t } from 'elysia'
import { oneOf } from '../../src/schemas.ts'
import { USAGE_KINDS } from '../../src/usage/meter.ts'

const kind = oneOf(USAGE_KINDS)

export const usageQuery = t.Object(
  {
    from: t.Optional(t.String({ format: 'date-time', description: 'Start of the period (inclusive). Default: 30 days before `to`' })),
    to: t.Optional(t.String({ format: 'date-time', description: 'End of the period (exclusive). Default: now' })),
    bucket: t.Optional(oneOf(['hour', 'day'], { description: 'Time-series granularity. Default day' })),
    userId: t.Optional(t.String({ maxLength: 64, description: 'Only this user of the organisation' })),
    kind: t.Optional(kind),
  },
  { additionalProperties: false },
)

export const usageReport = t.Object({
  organizationId: t.String(),
  period: t.Object({ from: t.String(), to: t.String(), bucket: t.String() }),
  totals: t.Array(t.Object({ kind, model: t.Union([t.String(), t.Null()]), quantity: t.Number() })),
  series: t.Array(t.Object({ bucketStart: t.String(), kind, quantity: t.Number() })),
})
