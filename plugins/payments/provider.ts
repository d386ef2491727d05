/**
 * The payment provider as the billing service sees it: the few Stripe calls it makes, each
 * failure turned into the service's own error codes. The real `stripe` SDK does the talking;
 * STRIPE_API_URL points it at another host (a local fake in tests).
 */
import type Stripe from 'stripe'
import type { PaymentSettings } from './settings.ts'
import { AppError } from '../../src/errors.ts'
import { lazily } from '../../src/lazy.ts'
import { verifyEventSignature, type VerifiedEvent } from './signature.ts'

export interface CheckoutSessionRequest {
  customerId: string
  priceId: string
  seats: number
  orgId: string
  userId: string
  plan: string
  interval: 'month' | 'year'
  successUrl: string
  cancelUrl: string
}

export interface CheckoutSessionCreated {
  id: string
  url: string
  /** Epoch ms, when the provider says. */
  expiresAt: number | null
  /** The provider answered from its idempotency cache: an earlier request made this session. */
  replayed: boolean
}

export interface PaymentProvider {
  readonly name: string
  createCustomer(input: { orgId: string; name: string }, idempotencyKey: string): Promise<{ id: string }>
  createCheckoutSession(input: CheckoutSessionRequest, idempotencyKey: string): Promise<CheckoutSessionCreated>
  createPortalSession(input: { customerId: string; returnUrl: string }): Promise<{ id: string; url: string }>
  /** Checks the signature over the exact bytes received and answers the event they carry. */
  verifyEvent(rawBody: string, signatureHeader: string | null, nowMs: number): Promise<VerifiedEvent>
}

type ProviderSettings = NonNullable<PaymentSettings['provider']>

export function createStripeProvider(settings: ProviderSettings, options: { toleranceSeconds: number }): PaymentProvider {
  // The SDK is loaded with the first call to Stripe, not at start-up.
  const client = lazily(async () => {
    const { default: StripeClient } = await import('stripe')
    return new StripeClient(settings.secretKey, {
      host: settings.api.host,
      port: settings.api.port,
      protocol: settings.api.protocol,
      timeout: settings.timeoutMs,
      // Retries reuse the idempotency key, so a retried create never makes a second object.
      maxNetworkRetries: 2,
      telemetry: false,
    })
  })
  const call = async <T>(action: string, run: (stripe: Stripe) => Promise<T>): Promise<T> => {
    const stripe = await client()
    try {
      return await run(stripe)
    } catch (err) {
      throw providerFailure(err, action)
    }
  }

  return {
    name: 'stripe',
    createCustomer: (input, idempotencyKey) =>
      call('create a customer', async (stripe) => {
        const customer = await stripe.customers.create({ name: input.name, metadata: { orgId: input.orgId } }, { idempotencyKey })
        return { id: customer.id }
      }),
    createCheckoutSession: (input, idempotencyKey) =>
      call('create a checkout session', async (stripe) => {
        const metadata = { orgId: input.orgId, userId: input.userId, plan: input.plan, seats: String(input.seats), interval: input.interval }
        const session = await stripe.checkout.sessions.create(
          {
            mode: 'subscription',
            customer: input.customerId,
            client_reference_id: input.orgId,
            line_items: [{ price: input.priceId, quantity: input.seats }],
            success_url: input.successUrl,
            cancel_url: input.cancelUrl,
            metadata,
            // Copied onto the subscription so its events name the organisation and plan too.
            subscription_data: { metadata: { orgId: input.orgId, plan: input.plan } },
            // Strong customer authentication: 3-D Secure whenever the issuer or regulation asks for it.
            payment_method_options: { card: { request_three_d_secure: 'automatic' } },
            billing_address_collection: 'auto',
          },
          { idempotencyKey },
        )
        if (!session.url)
          throw new AppError('upstream_error', 'The payment provider answered a checkout session without a URL', { extensions: { provider: 'stripe' } })
        return {
          id: session.id,
          url: session.url,
          expiresAt: typeof session.expires_at === 'number' ? session.expires_at * 1000 : null,
          replayed: session.lastResponse?.headers?.['idempotent-replayed'] === 'true',
        }
      }),
    createPortalSession: (input) =>
      call('create a billing portal session', async (stripe) => {
        const session = await stripe.billingPortal.sessions.create({ customer: input.customerId, return_url: input.returnUrl })
        return { id: session.id, url: session.url }
      }),
    verifyEvent: async (rawBody, signatureHeader, nowMs) =>
      verifyEventSignature((await client()).webhooks, {
        rawBody,
        signatureHeader,
        secret: settings.webhookSecret,
        toleranceSeconds: options.toleranceSeconds,
        nowMs,
      }),
  }
}

/** Maps an SDK failure to 502/503/504, saying which variable to check where that helps. */
export function providerFailure(err: unknown, action: string): AppError {
  if (err instanceof AppError) return err
  const e = err as { type?: string; statusCode?: number; message?: string; code?: string }
  const extensions = { provider: 'stripe', providerError: e.type ?? 'unknown' }
  const reason = e.message ?? String(err)
  switch (e.type) {
    case 'StripeConnectionError':
      return /timeout/i.test(reason)
        ? new AppError('upstream_timeout', `The payment provider did not answer in time when asked to ${action} (STRIPE_TIMEOUT_MS)`, {
            extensions,
            cause: err,
          })
        : new AppError('upstream_error', `The payment provider could not be reached to ${action} (STRIPE_API_URL)`, { extensions, cause: err })
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      return new AppError('upstream_error', `The payment provider refused the key when asked to ${action}; check STRIPE_SECRET_KEY`, { extensions, cause: err })
    case 'StripeRateLimitError':
      return new AppError('unavailable', `The payment provider is rate limiting; could not ${action}`, {
        extensions,
        headers: { 'retry-after': '5' },
        cause: err,
      })
    case 'StripeInvalidRequestError':
      return new AppError('upstream_error', `The payment provider refused to ${action}: ${reason} (check PLAN_PRICES)`, { extensions, cause: err })
    default:
      return new AppError('upstream_error', `The payment provider failed to ${action}: ${reason}`, { extensions, cause: err })
  }
}
