/**
 * The authenticated baseline: bare Bun.serve doing by hand what `/auth/me` must do, and nothing else. It
 * verifies the HS256 signature of every request's bearer token (HMAC with node:crypto, compared in constant
 * time), checks type, issuer, audience and expiry, checks a scope and counts the caller's requests in a
 * one-second window, then answers the same JSON shape as the service. No framework, no logging, no request ids,
 * no revocation list, no token cache: the least a correct hand-written route does.
 *
 * Env: JWT_SECRET, JWT_ISSUER, JWT_AUDIENCE (the service's), RATE_LIMIT_BURST (the window's allowance).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

const secret = process.env.JWT_SECRET ?? ''
const issuer = process.env.JWT_ISSUER ?? 'realtime-ai-backend'
const audience = process.env.JWT_AUDIENCE ?? 'realtime-ai-backend-api'
const burst = Number(process.env.RATE_LIMIT_BURST) || 1_000_000
if (!secret) throw new Error("JWT_SECRET is required: the baseline verifies the service's tokens")

const startedAt = Date.now()
const counters = new Map<string, { windowStart: number; count: number }>()

interface Claims {
  sub: string
  org: string
  role: string
  scope: string
  iss: string
  aud: string | string[]
  exp: number
}

function verified(authorization: string | null): Claims | undefined {
  if (!authorization?.startsWith('Bearer ')) return undefined
  const token = authorization.slice(7)
  const [header, payload, signature] = token.split('.')
  if (!header || !payload || !signature) return undefined
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest()
  const given = Buffer.from(signature, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  const { alg, typ } = JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string; typ: string }
  if (alg !== 'HS256' || typ !== 'at+jwt') return undefined
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Claims
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  if (claims.iss !== issuer || !audiences.includes(audience) || claims.exp * 1000 <= Date.now()) return undefined
  return claims
}

function withinRate(userId: string): boolean {
  const now = Date.now()
  const counter = counters.get(userId)
  if (!counter || now - counter.windowStart >= 1000) {
    counters.set(userId, { windowStart: now, count: 1 })
    return true
  }
  return ++counter.count <= burst
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT) || 0,
  fetch(request) {
    const { pathname } = new URL(request.url)
    if (request.method === 'GET' && pathname === '/health') return Response.json({ status: 'ok', uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) })
    if (request.method === 'GET' && pathname === '/auth/me') {
      const claims = verified(request.headers.get('authorization'))
      if (!claims) return Response.json({ error: { code: 'unauthenticated' } }, { status: 401 })
      const scopes = claims.scope.split(' ')
      if (!scopes.includes('usage:read')) return Response.json({ error: { code: 'insufficient_scope' } }, { status: 403 })
      if (!withinRate(claims.sub)) return Response.json({ error: { code: 'rate_limited' } }, { status: 429 })
      return Response.json({ userId: claims.sub, organizationId: claims.org, role: claims.role, scopes, plan: 'free', source: 'local' })
    }
    return new Response('not found', { status: 404 })
  },
})

console.log(`listening ${server.url.origin}`)

process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
