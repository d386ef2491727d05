/**
 * Personal API keys, as their owner manages them: created with scopes the owner's token carries and an expiry,
 * listed without secrets, revoked. Creation and revocation are appended to the audit log. How a key is checked
 * when it is used is src/auth/api-keys.ts and the access service's `authenticate`.
 */
import type { AccessService, Principal } from '../../src/auth/access-service.ts'
import { mintApiKey, type ApiKey, type ApiKeyStore } from '../../src/auth/api-keys.ts'
import type { Scope } from '../../src/auth/roles.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { PaymentsService } from '../payments/index.ts'

export interface ApiKeyServiceOptions {
  keys: ApiKeyStore
  access: Pick<AccessService, 'endApiKey'>
  audit: Pick<PaymentsService, 'recordAudit'>
  logger: Logger
  /** Keys a user may hold that are neither revoked nor expired. Default 50. */
  maxLiveKeys?: number
  now?: () => number
}

/** Where a request came from, for the audit entry. */
export interface RequestOrigin {
  requestId?: string | null
  clientIp?: string | null
}

const DAY_MS = 86_400_000

export function createApiKeyService(options: ApiKeyServiceOptions) {
  const { keys, logger } = options
  const now = options.now ?? Date.now
  const maxLive = options.maxLiveKeys ?? 50

  return {
    /** A new key for the caller; the answer holds the key itself, which is never shown again. */
    async create(
      caller: Principal,
      input: { name: string; scopes: readonly Scope[]; expiresInDays: number },
      origin: RequestOrigin,
    ): Promise<ApiKey & { key: string }> {
      const refused = input.scopes.filter((scope) => !caller.scopes.includes(scope))
      if (refused.length > 0) {
        const carried = caller.scopes.length ? caller.scopes.join(', ') : 'none'
        const message = `${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} not among the scopes your token carries (${carried})`
        throw new AppError('validation_failed', `scopes: ${message}`, { errors: [{ field: 'scopes', message }] })
      }
      const t = now()
      if ((await keys.countLive(caller.userId, t)) >= maxLive)
        throw new AppError('conflict', `You hold ${maxLive} API keys that still work, the most there may be: revoke one first (DELETE /api/keys/{keyId})`)
      const minted = mintApiKey()
      const key = await keys.insert({
        id: minted.id,
        userId: caller.userId,
        orgId: caller.orgId,
        name: input.name,
        scopes: input.scopes,
        secretHash: minted.secretHash,
        createdAt: t,
        expiresAt: t + input.expiresInDays * DAY_MS,
      })
      await options.audit.recordAudit({
        orgId: caller.orgId,
        actor: `user:${caller.userId}`,
        action: 'api_key.created',
        requestId: origin.requestId,
        clientIp: origin.clientIp,
        details: { keyId: key.id, name: key.name, scopes: key.scopes, expiresAt: key.expiresAt },
      })
      logger.info('API key created', { userId: caller.userId, keyId: key.id })
      return { ...key, key: minted.key }
    },

    list: (caller: Principal) => keys.listOf(caller.userId),

    /** Revokes one of the caller's keys, at once in every process; 404 for a key that is not theirs. */
    async revoke(caller: Principal, keyId: string, origin: RequestOrigin): Promise<void> {
      const key = await keys.revoke(caller.userId, keyId, now())
      if (!key) throw new AppError('not_found', 'You have no API key with this id')
      await options.access.endApiKey(key.id, key.expiresAt)
      // Revoking a revoked key again changes nothing, and records nothing.
      if (key.revokedAt !== null) return
      await options.audit.recordAudit({
        orgId: caller.orgId,
        actor: `user:${caller.userId}`,
        action: 'api_key.revoked',
        requestId: origin.requestId,
        clientIp: origin.clientIp,
        details: { keyId: key.id, name: key.name },
      })
      logger.info('API key revoked', { userId: caller.userId, keyId: key.id })
    },
  }
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>
