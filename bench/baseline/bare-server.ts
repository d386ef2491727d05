/**
 * The baseline: bare Bun.serve answering the same paths with the same JSON shapes as the service, with no
 * pipeline at all (no auth, no rate limit, no logging, no request ids). The service's cost is measured
 * against this, on the same machine, in the same run.
 */
const startedAt = Date.now()

// What the service answers for the bench's owner, so both bodies weigh about the same; fixed, since verifying
// nothing is the point.
const principal = {
  userId: 'usr_baseline',
  organizationId: 'org_baseline',
  role: 'owner',
  scopes: ['chat:write', 'integrations:read', 'integrations:write', 'billing:manage', 'search:read', 'agents:run', 'usage:read', 'audit:read'],
  plan: 'free',
  source: 'local',
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  // The start-up bench names the port, to time this start exactly as the service's; otherwise the kernel chooses.
  port: Number(process.env.PORT) || 0,
  fetch(request) {
    const { pathname } = new URL(request.url)
    if (request.method === 'GET' && pathname === '/health') return Response.json({ status: 'ok', uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) })
    if (request.method === 'GET' && pathname === '/auth/me') return Response.json(principal)
    return new Response('not found', { status: 404 })
  },
})

// The harness reads this one line to learn the port the kernel chose.
console.log(`listening ${server.url.origin}`)

process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
