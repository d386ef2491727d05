import { t } from 'elysia'
import { SCOPES } from '../../src/auth/roles.ts'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

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

const newPassword = t.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters' })

export const passwordChangeBody = strictObject({
  currentPassword: t.String({ minLength: 1, maxLength: 1024 }),
  newPassword,
})

export const passwordResetBody = strictObject({
  token: t.String({ minLength: 1, maxLength: 2048, description: 'The token of the reset link (its `token` query parameter)' }),
  newPassword,
})

export const passwordForgotBody = strictObject({
  email: t.String({ format: 'email', maxLength: 254, description: 'Account email (case-insensitive)' }),
})

const scope = oneOf(SCOPES)

/** Days a key works when expiresInDays is not given, and the most it may ask for. */
export const API_KEY_DEFAULT_DAYS = 90
export const API_KEY_MAX_DAYS = 365

export const apiKeyBody = strictObject({
  name: t.String({ minLength: 1, maxLength: 100, description: 'What the key is for, to recognise it in the list ("CI deploys")' }),
  scopes: t.Array(scope, {
    minItems: 1,
    maxItems: SCOPES.length,
    uniqueItems: true,
    description: "What the key may do: scopes the caller's token carries (their role's), no others",
  }),
  expiresInDays: t.Optional(
    integer({
      minimum: 1,
      maximum: API_KEY_MAX_DAYS,
      description: `Days until the key stops working; default ${API_KEY_DEFAULT_DAYS}, at most ${API_KEY_MAX_DAYS}`,
    }),
  ),
})

export const apiKeyParams = t.Object({
  keyId: t.String({ minLength: 1, maxLength: 100, description: 'Id of one of your API keys, as GET /api/keys lists it' }),
})

export const apiKeyView = t.Object({
  id: t.String(),
  name: t.String(),
  scopes: t.Array(scope),
  createdAt: integer({ description: 'ms since the epoch' }),
  expiresAt: integer({ description: 'ms since the epoch; the key is refused from then on' }),
  lastUsedAt: t.Union([integer(), t.Null()], { description: 'When it was last used (to the minute), or null' }),
  revokedAt: t.Union([integer(), t.Null()], { description: 'When it was revoked, or null' }),
})

export const createdApiKey = t.Composite([
  apiKeyView,
  t.Object({ key: t.String({ description: 'The key itself (rak_...), shown this once: send it as Authorization: Bearer' }) }),
])

export const apiKeyList = t.Object({ keys: t.Array(apiKeyView) })
