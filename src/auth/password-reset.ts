/**
 * Password reset links: `${PUBLIC_BASE_URL}/reset-password?token=...`, made by the operator command or sent to the
 * reset webhook. A token is signed, not stored: `<payload>.<mac>`, the payload the user id and expiry, the MAC an
 * HMAC-SHA256 (keyed from JWT_SECRET) over the payload and the user's current password hash. A reset changes that
 * hash, so a token works once, and a password changed any other way ends every link made before.
 */
import { AppError } from '../errors.ts'
import type { Logger } from '../log.ts'
import type { AccessService } from './access-service.ts'
import { normaliseEmail } from './access-service.ts'
import type { AccountStore, User } from './account-store.ts'

/** What the reset webhook receives (POST, JSON): enough to send one email. */
export interface ResetMessage {
  type: 'password_reset'
  email: string
  resetUrl: string
  /** ISO 8601. */
  expiresAt: string
}

export interface PasswordResetOptions {
  accounts: AccountStore
  access: Pick<AccessService, 'replacePassword'>
  logger: Logger
  /** Key material the MAC key is derived from (JWT_SECRET). */
  secret: string
  publicBaseUrl: string
  /** How long a link works (PASSWORD_RESET_TTL_SECONDS). */
  ttlSeconds: number
  /** Sends a link to the reset webhook (PASSWORD_RESET_WEBHOOK_URL); unset, POST /auth/password/forgot is 503. */
  deliver?: (message: ResetMessage) => Promise<void>
  /** Least time between two links sent for one account. Default 60 s. */
  resendSeconds?: number
  now?: () => number
}

export const RESET_PAGE_PATH = '/reset-password'

// Bun's own HMAC and comparison: node:crypto costs start-up several milliseconds to load.
const hmac = (key: string | Buffer, message: string) => Buffer.from(new Bun.CryptoHasher('sha256', key).update(message).digest())

const invalidLink = (detail: string) => new AppError('invalid_reset_token', detail)

export function createPasswordResets(options: PasswordResetOptions) {
  const { accounts, logger } = options
  const now = options.now ?? Date.now
  const key = hmac(options.secret, 'password-reset-links')
  const baseUrl = options.publicBaseUrl.replace(/\/+$/, '')
  // Per process: a second request for the same account within resendSeconds sends nothing.
  const lastSent = new Map<string, number>()

  const mac = (payload: string, passwordHash: string) => hmac(key, `${payload}.${passwordHash}`)

  /** A link for the user, valid for ttlSeconds or until their password changes. */
  function linkFor(user: User): { url: string; token: string; expiresAt: number } {
    if (!user.passwordHash) throw new AppError('forbidden', `${user.email} signs in through the identity provider: there is no password here to reset`)
    const expiresAt = now() + options.ttlSeconds * 1000
    const payload = Buffer.from(JSON.stringify([user.id, expiresAt])).toString('base64url')
    const token = `${payload}.${mac(payload, user.passwordHash).toString('base64url')}`
    return { url: `${baseUrl}${RESET_PAGE_PATH}?token=${token}`, token, expiresAt }
  }

  /** The user a token was made for, if it is still good: signed here, for their current password, not expired. */
  async function holderOf(token: string): Promise<User> {
    const [payload, signature, extra] = token.split('.')
    let claims: unknown
    try {
      claims = payload && signature && extra === undefined ? JSON.parse(Buffer.from(payload, 'base64url').toString()) : undefined
    } catch {
      claims = undefined
    }
    const [userId, expiresAt] = Array.isArray(claims) ? claims : []
    const user = typeof userId === 'string' ? await accounts.userById(userId) : undefined
    // Compared even when there is no such user, so an unknown one and a wrong signature take the same steps.
    const expected = mac(payload ?? '', user?.passwordHash ?? 'none')
    const given = Buffer.from(signature ?? '', 'base64url')
    const signed = given.length === expected.length && crypto.timingSafeEqual(given, expected)
    if (!user?.passwordHash || !signed || typeof expiresAt !== 'number')
      throw invalidLink('This reset link is not valid: it was used already, the password changed since it was made, or it is not a link of this service')
    if (expiresAt <= now()) throw invalidLink('This reset link has expired: ask for a new one')
    return user
  }

  return {
    linkFor,

    /** Sets a new password with a reset token, once; every session of the user ends. */
    async reset(token: string, newPassword: string): Promise<void> {
      const user = await holderOf(token)
      if (!(await options.access.replacePassword(user, newPassword))) throw invalidLink('This reset link was used already')
      await accounts.clearLoginFailures(`email:${user.email}`)
    },

    /** Whether links can be sent (the webhook is configured). */
    get canSend() {
      return options.deliver !== undefined
    },

    /**
     * Sends a link to the account's email through the webhook, in the background: the caller's answer is the same,
     * and as quick, whether the address has an account or not.
     */
    requestLink(email: string): void {
      const deliver = options.deliver
      if (!deliver)
        throw new AppError(
          'not_configured',
          'Password reset by email is not configured: set PASSWORD_RESET_WEBHOOK_URL, or ask an operator (admin users reset-password)',
        )
      void (async () => {
        const user = await accounts.userByEmail(normaliseEmail(email))
        if (!user?.passwordHash) return
        const t = now()
        if (t - (lastSent.get(user.id) ?? 0) < (options.resendSeconds ?? 60) * 1000) return
        lastSent.set(user.id, t)
        if (lastSent.size > 10_000) lastSent.delete(lastSent.keys().next().value!)
        const link = linkFor(user)
        await deliver({ type: 'password_reset', email: user.email, resetUrl: link.url, expiresAt: new Date(link.expiresAt).toISOString() })
        logger.info('password reset link sent', { userId: user.id })
      })().catch((err) => logger.warn('password reset link not sent', { err }))
    },
  }
}

export type PasswordResets = ReturnType<typeof createPasswordResets>
