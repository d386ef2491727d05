/**
 * A second process on a port already in use stops with exit status 78 and a message naming the port, instead of
 * sharing it silently; PORT_SHARED=true on every process shares it on purpose.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import { tempDir } from '../helpers.ts'
import { startServiceProcess, type ServiceProcess } from '../scale-out/cluster.ts'

const projectRoot = join(import.meta.dir, '../..')
const startArguments = pkg.scripts.start.split(/\s+/).slice(1)
const started: ServiceProcess[] = []
const dirs: ReturnType<typeof tempDir>[] = []

afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()))
  for (const dir of dirs) dir.remove()
})

/** Each process has its own embedded data, so which one answered shows in its data. */
function ownEnv(extra: Record<string, string> = {}): Record<string, string> {
  const dir = tempDir('port-in-use-')
  dirs.push(dir)
  return { DATA_DIR: dir.path, ...extra }
}

/** Runs the service to its exit (or 20 s), answering its status and what it wrote. */
async function runToExit(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const proc = Bun.spawn([process.execPath, ...startArguments], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code: proc.signalCode ? null : code, out: out + err }
}

describe('a port already in use', () => {
  test('stops the second process with exit 78, naming the port; the first keeps answering alone', async () => {
    const first = await startServiceProcess('first', ownEnv())
    started.push(first)
    const port = new URL(first.url).port
    const second = await runToExit(ownEnv({ PORT: port }))
    expect(second.code).toBe(78)
    expect(second.out).toContain(`127.0.0.1:${port} is already in use`)
    expect(second.out).toContain('PORT_SHARED')
    expect((await first.request('/health')).status).toBe(200)
  }, 120_000)

  test('with PORT_SHARED=true on both, two processes listen on one port', async () => {
    // A free port: one the kernel picks for a listener closed at once.
    const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = String(probe.port)
    probe.stop(true)
    const one = await startServiceProcess('shared-1', ownEnv({ PORT: port, PORT_SHARED: 'true' }))
    started.push(one)
    const two = await startServiceProcess('shared-2', ownEnv({ PORT: port, PORT_SHARED: 'true' }))
    started.push(two)
    expect(new URL(two.url).port).toBe(port)
    expect((await two.request('/health')).status).toBe(200)
  }, 120_000)
})
