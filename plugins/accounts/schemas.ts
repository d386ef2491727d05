import { t } from 'elysia'
import { integer, strictObject } from '../../src/schemas.ts'

export const userParams = t.Object({
  userId: t.String({ minLength: 1, maxLength: 100, description: 'The user to delete: a member of your organisation, or yourself' }),
})

export const organizationDeletionBody = strictObject({
  confirm: t.String({ minLength: 1, maxLength: 200, description: "The organisation's name, exactly as GET /api/org answers it: proof the deletion is meant" }),
})

export const organizationView = t.Object({
  id: t.String(),
  name: t.String(),
  plan: t.String(),
  members: t.Array(t.Object({ id: t.String(), email: t.String(), role: t.String() })),
})

export const deletionReport = t.Object({
  deleted: t.Union([t.Literal('user'), t.Literal('organization')]),
  id: t.String({ description: 'Id of the user or organisation deleted' }),
  removed: t.Record(t.String(), integer(), { description: 'What was deleted or anonymised, counted by kind (chats, sessions, integrationConnections...)' }),
  auditSeq: integer({ description: 'Sequence number of the audit log entry that records the deletion' }),
})
