/**
 * Webhook signature checks. The SDK's `constructEventAsync` verifies the HMAC over the exact bytes
 * and refuses old timestamps; it accepts any timestamp in the future, so that side is checked here.
 * Under Bun the SDK runs its Web Crypto build, where only the async functions work.
 */
import { AppError } from '../../src/errors.ts'

export type SignatureFailure = 'missing' | 'malformed' | 'mismatch' | 'stale' | 'future'

/** An event whose signature checked out: the provider's own JSON, untouched. */
export interface VerifiedEvent {
  id: string
  type: string
  /** When the provider created the event, unix seconds. */
  created: number
  /** `data.object`: the checkout session, subscription or invoice the event is about. */
  object: Record<string, unknown>
  /** The body exactly as signed, stored as the event's payload. */
  raw: string
}

interface WebhookVerifier {
  constructEventAsync(payload: string, header: string, secret: string, tolerance?: number, cryptoProvider?: undefined, receivedAt?: number): Promise<unknown>
}

const invalid = (reason: SignatureFailure, message: string) =>
  new AppError('invalid_signature', message, { extensions: { reason }, errors: [{ field: 'stripe-signature', message }] })

/** `t=<seconds>,v1=<hex>[,v1=<hex>...]` (other schemes such as v0 are allowed and ignored); undefined when malformed. */
export function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined
  const signatures: string[] = []
  for (const item of header.split(',')) {
    const eq = item.indexOf('=')
    if (eq <= 0) return undefined
    const key = item.slice(0, eq).trim()
    const value = item.slice(eq + 1).trim()
    if (key === 't') {
      // Two timestamps would let the library and this check read different ones.
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return undefined
      timestamp = Number(value)
    } else if (key === 'v1') signatures.push(value)
  }
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures }
}

export async function verifyEventSignature(
  webhooks: WebhookVerifier,
  input: { rawBody: string; signatureHeader: string | null; secret: string; toleranceSeconds: number; nowMs: number },
): Promise<VerifiedEvent> {
  const { rawBody, signatureHeader, secret, toleranceSeconds, nowMs } = input
  if (!signatureHeader) throw invalid('missing', 'The Stripe-Signature header is missing')
  const parsed = parseSignatureHeader(signatureHeader)
  if (!parsed) throw invalid('malformed', 'The Stripe-Signature header must look like t=<unix seconds>,v1=<hex signature>[,v1=...]')
  const skew = parsed.timestamp - Math.floor(nowMs / 1000)
  if (skew > toleranceSeconds) throw invalid('future', `The signature timestamp is ${skew} s in the future; at most ${toleranceSeconds} s is tolerated`)
  if (-skew > toleranceSeconds) throw invalid('stale', `The signature timestamp is ${-skew} s old; at most ${toleranceSeconds} s is tolerated`)
  let event: unknown
  try {
    // Any one of several v1 signatures may match: the provider signs with old and new secrets while one is rolled.
    event = await webhooks.constructEventAsync(rawBody, signatureHeader, secret, toleranceSeconds, undefined, nowMs)
  } catch (err) {
    if ((err as { type?: string }).type !== 'StripeSignatureVerificationError') throw err
    if (/tolerance/i.test((err as Error).message)) throw invalid('stale', `The signature timestamp is older than ${toleranceSeconds} s`)
    throw invalid('mismatch', 'No signature in the Stripe-Signature header matches the body and the webhook secret')
  }
  return eventFrom(event, rawBody)
}

function eventFrom(value: unknown, raw: string): VerifiedEvent {
  const e = value as { id?: unknown; type?: unknown; created?: unknown; data?: { object?: unknown } } | null
  const object = e?.data?.object
  if (typeof e?.id !== 'string' || e.id === '' || typeof e.type !== 'string' || !Number.isInteger(e.created) || typeof object !== 'object' || object === null)
    throw new AppError('bad_request', 'The signed body is not an event: it needs id, type, created and data.object', {
      errors: [{ field: 'body', message: 'not an event' }],
    })
  return { id: e.id, type: e.type, created: e.created as number, object: object as Record<string, unknown>, raw }
}
