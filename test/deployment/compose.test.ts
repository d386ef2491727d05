/** compose.yaml: PostgreSQL, Redis, two replicas and nginx, wired the way the service and the other files expect. */
import { afterAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { composeFile, dockerArgs, dockerEnv, dockerStages, durationMs, environmentOf, numericDefault, readDeploymentFile, replicas, ROOT } from './files.ts'

const compose = composeFile()
const services = compose.services
const runtime = dockerStages(readDeploymentFile('Dockerfile')).at(-1)!
const imageEnv = dockerEnv(runtime)

test('parses, with PostgreSQL, Redis, two replicas of the service and the proxy', () => {
  expect(Object.keys(services).sort()).toEqual(['postgres', 'proxy', 'redis', 'service-1', 'service-2'])
  expect(services.postgres!.image).toStartWith('postgres:')
  expect(services.redis!.image).toStartWith('redis:')
  expect(services.proxy!.image).toStartWith('nginx:')
  expect(replicas(compose).map(([name]) => name)).toEqual(['service-1', 'service-2'])
})

test('the replicas are built from docs/deployment/Dockerfile with the project as the context', () => {
  for (const [, replica] of replicas(compose)) {
    const context = join(ROOT, 'docs', 'deployment', replica.build!.context)
    expect(context).toBe(ROOT)
    expect(existsSync(join(context, replica.build!.dockerfile))).toBe(true)
    expect(replica.init).toBe(true)
  }
})

test('every service has a healthcheck, and the replicas check readiness on their own port', () => {
  for (const name of ['postgres', 'redis', 'service-1', 'service-2']) expect(services[name]!.healthcheck?.test[0]).toBe('CMD')
  for (const [, replica] of replicas(compose)) {
    const command = replica.healthcheck!.test.join(' ')
    expect(command).toContain('GET /ready ')
    expect(command).toContain(`/dev/tcp/127.0.0.1/${environmentOf(replica).PORT}`)
  }
})

test('start-up order waits on health: replicas on PostgreSQL and Redis, the proxy on both replicas', () => {
  for (const [, replica] of replicas(compose))
    expect(replica.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } })
  expect(services.proxy!.depends_on).toEqual({ 'service-1': { condition: 'service_healthy' }, 'service-2': { condition: 'service_healthy' } })
})

test('the replicas share one database, one Redis and one DATA_DIR volume, at the path the image declares', () => {
  const postgres = environmentOf(services.postgres!)
  for (const [, replica] of replicas(compose)) {
    const env = environmentOf(replica)
    const database = new URL(env.DATABASE_URL!)
    expect([database.hostname, database.username, database.password, database.pathname]).toEqual([
      'postgres',
      postgres.POSTGRES_USER!,
      postgres.POSTGRES_PASSWORD!,
      `/${postgres.POSTGRES_DB}`,
    ])
    expect(new URL(env.REDIS_URL!).hostname).toBe('redis')
    expect(env.DATA_DIR).toBe(imageEnv.DATA_DIR!)
    expect(dockerArgs(runtime, 'VOLUME')).toEqual([imageEnv.DATA_DIR!])
    expect(replica.volumes).toEqual([`data:${imageEnv.DATA_DIR}`])
    expect(env.PORT).toBe(imageEnv.PORT!)
  }
  expect(Object.keys(compose.volumes ?? {})).toContain('data')
})

test('the stop grace period outlasts SHUTDOWN_DRAIN_DELAY_MS plus SHUTDOWN_TIMEOUT_MS, so requests in flight finish before SIGKILL', () => {
  for (const [, replica] of replicas(compose)) {
    const setting = (name: string) => Number(environmentOf(replica)[name] ?? numericDefault(name))
    expect(durationMs(replica.stop_grace_period!)).toBeGreaterThan(setting('SHUTDOWN_DRAIN_DELAY_MS') + setting('SHUTDOWN_TIMEOUT_MS'))
  }
})

test("TRUSTED_PROXIES is the proxy's fixed address on the replicas' network", () => {
  const network = (service: string) => (services[service]!.networks as Record<string, { ipv4_address: string }>).backend!
  const subnet = compose.networks!.backend!.ipam!.config![0]!.subnet
  const proxyAddress = network('proxy').ipv4_address
  expect(proxyAddress.split('.').slice(0, 3).join('.')).toBe(subnet.split('.').slice(0, 3).join('.'))
  for (const [name, replica] of replicas(compose)) {
    expect(environmentOf(replica).TRUSTED_PROXIES).toBe(proxyAddress)
    expect(network(name).ipv4_address).not.toBe(proxyAddress)
  }
})

test('the proxy runs docs/deployment/nginx.conf and publishes the port it listens on', () => {
  const proxy = services.proxy!
  expect(proxy.volumes).toEqual(['./nginx.conf:/etc/nginx/nginx.conf:ro'])
  const listen = /^\s*listen\s+(\d+);/m.exec(readDeploymentFile('nginx.conf'))![1]
  expect(proxy.ports).toEqual([`${listen}:${listen}`])
  const publicUrl = new URL(environmentOf(replicas(compose)[0]![1]).PUBLIC_BASE_URL!)
  expect(publicUrl.port).toBe(listen!)
  const upstreams = [...readDeploymentFile('nginx.conf').matchAll(/^\s*server\s+([\w-]+):(\d+)/gm)].map((m) => `${m[1]}:${m[2]}`)
  expect(upstreams).toEqual(replicas(compose).map(([name, replica]) => `${name}:${environmentOf(replica).PORT}`))
})

// The image has no HTTP client: the healthcheck is bash's /dev/tcp and a look at the status line.
// Run here against a server that answers /ready like the service does (200 ready, 503 draining).
let readyStatus = 200
const readyServer = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: (request) =>
    new URL(request.url).pathname === '/ready'
      ? Response.json({ status: readyStatus === 200 ? 'ready' : 'not_ready' }, { status: readyStatus })
      : new Response('not found', { status: 404 }),
})
afterAll(() => readyServer.stop(true))

function runHealthcheck(port: number) {
  const [, ...command] = replicas(compose)[0]![1].healthcheck!.test
  const rendered = command.map((arg) => arg.replace('/dev/tcp/127.0.0.1/3000', `/dev/tcp/127.0.0.1/${port}`))
  // Not spawnSync: the server answering it runs on this event loop.
  return Bun.spawn(rendered, { stdio: ['ignore', 'ignore', 'ignore'] }).exited
}

test.skipIf(!Bun.which('bash'))("the replicas' healthcheck passes on 200 from /ready and fails on 503 or no answer", async () => {
  readyStatus = 200
  expect(await runHealthcheck(readyServer.port!)).toBe(0)
  readyStatus = 503
  expect(await runHealthcheck(readyServer.port!)).not.toBe(0)
  const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = closed.port
  closed.stop(true)
  expect(await runHealthcheck(port)).not.toBe(0)
})
