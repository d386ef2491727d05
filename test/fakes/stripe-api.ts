/**
 * A fake Stripe API for the real `stripe` SDK, which reaches it through its host, port and protocol
 * options. It speaks the real protocol: bearer secret key, form-encoded bodies with bracketed keys
 * (`line_items[0][price]`), Stripe's error bodies, and the Idempotency-Key header (the same key with
 * the same parameters answers the first response again with `Idempotent-Replayed: true`, even while
 * that first request is still running; with other parameters it is a 400 idempotency_error).
 * Customers, Checkout Sessions and billing portal sessions are implemented: the calls the service makes.
 */
import { startFakeServer, type RecordedRequest } from './server.ts'

type Obj = Record<string, any>

export interface FakeStripe {
  readonly url: string
  readonly requests: RecordedRequest[]
  readonly customers: Map<string, Obj>
  readonly checkoutSessions: Map<string, Obj>
  readonly portalSessions: Map<string, Obj>
  /** Price ids that exist; a checkout naming another one is refused like Stripe does. */
  readonly prices: Set<string>
  /** The next `times` API calls answer this status with a Stripe error body. */
  failNext(status: number, times?: number): void
  close(): Promise<void>
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'request-id': `req_${randomId()}`, ...headers } })

const stripeError = (status: number, type: string, message: string, extra: Obj = {}) => json({ error: { type, message, ...extra } }, status)

function randomId(): string {
  return crypto.randomUUID().replace(/-/g, '').slice(0, 24)
}

/** `a[b][0][c]=v` pairs into nested objects; numeric keys make arrays, as Stripe reads them. */
export function parseStripeForm(body: string): Obj {
  const root: Obj = {}
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const path = rawKey.split(/\[|\]\[|\]/).filter((p) => p !== '')
    let node: any = root
    path.forEach((part, i) => {
      const last = i === path.length - 1
      const nextIsIndex = !last && /^\d+$/.test(path[i + 1]!)
      if (last) node[part] = value
      else node = node[part] ??= nextIsIndex ? [] : {}
    })
  }
  return root
}

export function startFakeStripe(options: { secretKey: string; prices?: Iterable<string> }): FakeStripe {
  const customers = new Map<string, Obj>()
  const checkoutSessions = new Map<string, Obj>()
  const portalSessions = new Map<string, Obj>()
  const prices = new Set(options.prices ?? [])
  const idempotent = new Map<string, { fingerprint: string; answer: Promise<{ status: number; body: unknown }> }>()
  let failure: { status: number; times: number } | undefined
  const now = () => Math.floor(Date.now() / 1000)

  function createCustomer(params: Obj) {
    const customer = {
      id: `cus_${randomId()}`,
      object: 'customer',
      created: now(),
      name: params.name ?? null,
      email: params.email ?? null,
      metadata: params.metadata ?? {},
      livemode: false,
    }
    customers.set(customer.id, customer)
    return { status: 200, body: customer }
  }

  function createCheckoutSession(params: Obj) {
    if (!['payment', 'setup', 'subscription'].includes(params.mode))
      return { status: 400, body: { error: { type: 'invalid_request_error', param: 'mode', message: 'Invalid mode' } } }
    if (!params.success_url)
      return { status: 400, body: { error: { type: 'invalid_request_error', param: 'success_url', message: 'Missing required param: success_url.' } } }
    const lineItems: Obj[] = params.line_items ?? []
    if (params.mode === 'subscription' && lineItems.length === 0)
      return {
        status: 400,
        body: {
          error: { type: 'invalid_request_error', param: 'line_items', message: 'You must provide at least one recurring price in `subscription` mode.' },
        },
      }
    for (const item of lineItems)
      if (!prices.has(item.price))
        return {
          status: 400,
          body: {
            error: { type: 'invalid_request_error', code: 'resource_missing', param: 'line_items[0][price]', message: `No such price: '${item.price}'` },
          },
        }
    if (params.customer && !customers.has(params.customer))
      return {
        status: 400,
        body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'customer', message: `No such customer: '${params.customer}'` } },
      }
    const id = `cs_test_${randomId()}`
    const session = {
      id,
      object: 'checkout.session',
      mode: params.mode,
      customer: params.customer ?? null,
      client_reference_id: params.client_reference_id ?? null,
      metadata: params.metadata ?? {},
      success_url: params.success_url,
      cancel_url: params.cancel_url ?? null,
      payment_method_options: params.payment_method_options ?? {},
      status: 'open',
      payment_status: 'unpaid',
      subscription: null,
      created: now(),
      expires_at: now() + 86_400,
      url: `https://checkout.stripe.test/c/pay/${id}`,
      livemode: false,
    }
    checkoutSessions.set(id, { ...session, line_items: lineItems, subscription_data: params.subscription_data ?? {} })
    return { status: 200, body: session }
  }

  function createPortalSession(params: Obj) {
    if (!params.customer || !customers.has(params.customer))
      return {
        status: 400,
        body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'customer', message: `No such customer: '${params.customer}'` } },
      }
    const id = `bps_${randomId()}`
    const session = {
      id,
      object: 'billing_portal.session',
      customer: params.customer,
      return_url: params.return_url ?? null,
      created: now(),
      url: `https://billing.stripe.test/p/session/${id}`,
      livemode: false,
    }
    portalSessions.set(id, session)
    return { status: 200, body: session }
  }

  const server = startFakeServer(async (request, recorded) => {
    const url = new URL(request.url)
    if (request.headers.get('authorization') !== `Bearer ${options.secretKey}`) return stripeError(401, 'invalid_request_error', 'Invalid API Key provided')
    if (failure && failure.times > 0) {
      failure.times--
      return stripeError(failure.status, failure.status === 429 ? 'rate_limit_error' : 'api_error', `fake failure ${failure.status}`)
    }
    if (request.method !== 'POST') return stripeError(404, 'invalid_request_error', `Unrecognized request URL (${request.method}: ${url.pathname})`)
    if (!/^application\/x-www-form-urlencoded/.test(request.headers.get('content-type') ?? ''))
      return stripeError(400, 'invalid_request_error', 'Bodies must be form-encoded')
    const params = parseStripeForm(recorded.body)
    const create = { '/v1/customers': createCustomer, '/v1/checkout/sessions': createCheckoutSession, '/v1/billing_portal/sessions': createPortalSession }[
      url.pathname
    ]
    if (!create) return stripeError(404, 'invalid_request_error', `Unrecognized request URL (POST: ${url.pathname})`)

    const key = request.headers.get('idempotency-key')
    if (!key) {
      const answer = create(params)
      return json(answer.body, answer.status)
    }
    const fingerprint = `${url.pathname}\n${recorded.body}`
    const seen = idempotent.get(key)
    if (seen) {
      if (seen.fingerprint !== fingerprint)
        return stripeError(
          400,
          'idempotency_error',
          `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}'.`,
        )
      const answer = await seen.answer
      return json(answer.body, answer.status, { 'idempotent-replayed': 'true', 'idempotency-key': key })
    }
    const answer = Promise.resolve().then(() => create(params))
    idempotent.set(key, { fingerprint, answer })
    const first = await answer
    return json(first.body, first.status, { 'idempotency-key': key })
  })

  return {
    url: server.url,
    requests: server.requests,
    customers,
    checkoutSessions,
    portalSessions,
    prices,
    failNext(status, times = 1) {
      failure = { status, times }
    },
    close: () => server.close(),
  }
}
