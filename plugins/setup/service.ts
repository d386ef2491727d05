import type { AccessService, TokenPair } from '../../src/auth/access-service.ts'
import type { AccountStore } from '../../src/auth/account-store.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { toNumber, type Database } from '../../src/storage/database.ts'

/**
 * First run: while the service has no user, each start stores a one-time setup code (its SHA-256 hash, with an
 * expiry) and logs it; the code creates the first owner once. Several processes on one database each store and
 * log their own code, and any stored one works; a one-row claim makes sure only one request creates the owner.
 */

export interface SetupServiceDeps {
  db: Database
  access: Pick<AccessService, 'register' | 'createAccount' | 'attempts'>
  accounts: Pick<AccountStore, 'countUsers'>
  logger: Logger
  /** How long a code works after the start that made it (SETUP_CODE_TTL_SECONDS). */
  codeTtlSeconds: number
  now?: () => number
}

export interface FirstOwner {
  email: string
  password: string
  organizationName: string
}

export interface SetupCode {
  /** As people type it: four groups of four characters. */
  code: string
  expiresAt: number
}

// Crockford's base32: no I, L, O or U, so a code read off a screen is typed back without ambiguity.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
const CODE_LENGTH = 16 // 80 random bits: guessing is hopeless within any expiry, lock or not.

/** A new code, `XXXX-XXXX-XXXX-XXXX`. */
export function newSetupCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(CODE_LENGTH))
  const chars = [...bytes].map((b) => ALPHABET[b & 31]!).join('')
  return chars.match(/.{4}/g)!.join('-')
}

/** The code as stored: case, spaces and dashes do not matter, and O, I and L read as 0, 1 and 1. */
export function normaliseSetupCode(typed: string): string {
  return typed
    .toUpperCase()
    .replace(/[\s-]+/g, '')
    .replace(/O/g, '0')
    .replace(/[IL]/g, '1')
}

/** The start-up log line that carries a new code (`setupCode`) and where to use it (`setupUrl`). */
export const SETUP_LOG_MESSAGE = 'first run: open setupUrl and enter setupCode to create the first owner'

const hashCode = (typed: string) => new Bun.CryptoHasher('sha256').update(normaliseSetupCode(typed)).digest('hex')

// A claim left by a process that died between taking it and creating the owner is given up after this.
const STALE_CLAIM_MS = 60_000

export const setupDone = () => new AppError('setup_done', 'Setup is complete: the first owner exists. Sign in with POST /auth/login')

export function createSetupService(deps: SetupServiceDeps) {
  const { db, access, logger } = deps
  const now = deps.now ?? Date.now
  // Setup never opens again once a user exists, so the answer is kept from then on.
  let closed = false

  async function forgetCodes(): Promise<void> {
    await db.sql`DELETE FROM setup_codes`
  }

  async function releaseStaleClaim(): Promise<void> {
    await db.sql`DELETE FROM setup_completion WHERE user_id IS NULL AND claimed_at < ${now() - STALE_CLAIM_MS}`
  }

  /** True while no user exists and nobody is creating the first owner. */
  async function isOpen(): Promise<boolean> {
    if (closed) return false
    const [row] = await db.sql`
      SELECT (SELECT COUNT(*) FROM users) AS users,
             (SELECT COUNT(*) FROM setup_completion WHERE user_id IS NOT NULL OR claimed_at >= ${now() - STALE_CLAIM_MS}) AS claims`
    if (toNumber(row.users) > 0) {
      closed = true
      await forgetCodes()
      return false
    }
    return toNumber(row.claims) === 0
  }

  /** At start-up: a new code, stored hashed, when no user exists; nothing (and no stored code left) otherwise. */
  async function createCode(): Promise<SetupCode | undefined> {
    const t = now()
    await db.sql`DELETE FROM setup_codes WHERE expires_at <= ${t}`
    if (!(await isOpen())) return undefined
    const code = newSetupCode()
    const expiresAt = t + deps.codeTtlSeconds * 1000
    await db.sql`INSERT INTO setup_codes ${db.sql({ code_hash: hashCode(code), expires_at: expiresAt, created_at: t })}`
    return { code, expiresAt }
  }

  /** Spends the code; a refusal says whether it had expired, and counts toward the address's lock. */
  async function spend(typed: string, subject: string): Promise<{ hash: string; expiresAt: number }> {
    const hash = hashCode(typed)
    const [spent] = await db.sql`DELETE FROM setup_codes WHERE code_hash = ${hash} AND expires_at > ${now()} RETURNING expires_at`
    if (spent) return { hash, expiresAt: toNumber(spent.expires_at) }
    const [expired] = await db.sql`DELETE FROM setup_codes WHERE code_hash = ${hash} RETURNING code_hash`
    await access.attempts.recordFailure(subject)
    throw new AppError(
      'invalid_setup_code',
      expired
        ? 'The setup code has expired; restart the service and use the new code it logs'
        : 'The setup code is wrong or was already used; use the code of the latest "first run" line of the service log',
    )
  }

  /**
   * Creates the first owner, a new organisation's, with a stored code; with `signIn`, also its tokens. Wrong
   * codes count toward the address's sign-in lock (`setup:<address>`).
   */
  async function complete(
    input: FirstOwner & { code: string },
    clientIp: string,
    options: { signIn: boolean },
  ): Promise<{ userId: string; tokens?: TokenPair }> {
    const subject = `setup:${clientIp}`
    await access.attempts.assertNotLocked([subject])
    if (!(await isOpen())) throw setupDone()
    const code = await spend(input.code, subject)
    await releaseStaleClaim()
    const [claim] = await db.sql`INSERT INTO setup_completion (id, claimed_at) VALUES (1, ${now()}) ON CONFLICT (id) DO NOTHING RETURNING id`
    if (!claim) throw setupDone()
    let userId: string
    let tokens: TokenPair | undefined
    try {
      // A user made meanwhile some other way (the admin command) ends setup too.
      if ((await deps.accounts.countUsers()) > 0) throw setupDone()
      const owner = { email: input.email, password: input.password, role: 'owner' as const, orgName: input.organizationName }
      if (options.signIn) {
        tokens = await access.register(owner.email, owner.password, owner.orgName)
        userId = tokens.user.id
      } else userId = (await access.createAccount(owner)).id
    } catch (err) {
      // The code works again unless setup is over; the claim is released either way.
      await db.sql`DELETE FROM setup_completion WHERE id = 1 AND user_id IS NULL`
      if (!(err instanceof AppError && err.code === 'setup_done'))
        await db.sql`INSERT INTO setup_codes ${db.sql({ code_hash: code.hash, expires_at: code.expiresAt, created_at: now() })} ON CONFLICT (code_hash) DO NOTHING`
      throw err
    }
    closed = true
    await db.sql`UPDATE setup_completion SET user_id = ${userId} WHERE id = 1`
    await forgetCodes()
    await access.attempts.clear(subject)
    logger.info('first owner created', { userId, via: 'setup' })
    return { userId, tokens }
  }

  return { isOpen, createCode, complete }
}

export type SetupService = ReturnType<typeof createSetupService>
