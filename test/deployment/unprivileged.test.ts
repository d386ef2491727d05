/**
 * The service as the deployment docs run it: as a user that is not root (systemd `User=`, the image's `USER`).
 * Started so, it signs its owner in and runs a develop task whose commands run in the sandbox (a user namespace
 * mapped onto the service's uid) and whose workspace is a plain directory, measured while commands run.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectAgent, isFinal } from '../agents/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startServiceProcess, type ServiceProcess } from '../scale-out/cluster.ts'

/** A uid and gid no account on the machine has. */
const SERVICE_UID = 43_210
const asRoot = process.getuid?.() === 0
const setpriv = Bun.which('setpriv')
const runnable = asRoot && setpriv !== null
if (!runnable) console.warn('[skip] the unprivileged start needs root (to switch to another uid) and setpriv')

describe.if(runnable)('the service run as an unprivileged user', () => {
  let model: FakeOpenAi
  let service: ServiceProcess
  let dataDir: string
  const owner = { email: 'owner@unprivileged.example', password: 'unprivileged-owner-password-1' }

  beforeAll(async () => {
    model = startFakeOpenAi()
    dataDir = mkdtempSync(join(tmpdir(), 'unprivileged-'))
    chownSync(dataDir, SERVICE_UID, SERVICE_UID)
    chmodSync(dataDir, 0o700)
    service = await startServiceProcess(
      'unprivileged',
      { DATA_DIR: dataDir, HOME: dataDir, ADMIN_EMAIL: owner.email, ADMIN_PASSWORD: owner.password, OPENAI_BASE_URL: model.baseUrl, CHAT_MODEL: 'fake-model' },
      { asUser: SERVICE_UID },
    )
  })
  afterAll(async () => {
    await service?.stop()
    await model?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('it runs as that uid, with no supplementary group and no capability', () => {
    const status = readFileSync(`/proc/${service.pid}/status`, 'utf8')
    // setpriv execs Bun in place, so the pid is the service's own.
    expect(status).toMatch(new RegExp(`^Uid:\\s+${SERVICE_UID}\\s+${SERVICE_UID}\\s+${SERVICE_UID}\\s+${SERVICE_UID}$`, 'm'))
    expect(status).toMatch(/^Groups:\s*$/m)
    expect(status).toMatch(/^CapEff:\s+0+$/m)
  })

  test('a develop task runs its commands in the sandbox and hands back the diff', async () => {
    const login = await service.request('/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(owner) })
    expect(login.status).toBe(200)
    const { accessToken } = (await login.json()) as { accessToken: string }
    const write = (path: string, content: string) => ({
      toolCalls: [{ name: 'write_file', arguments: JSON.stringify({ path, content }) }],
      finishReason: 'tool_calls' as const,
    })
    model.queue = [
      write('sum.ts', 'export const sum = (a: number, b: number) => a + b\n'),
      write('sum.test.ts', "import { expect, test } from 'bun:test'\nimport { sum } from './sum'\ntest('adds', () => expect(sum(2, 3)).toBe(5))\n"),
      {
        toolCalls: [{ name: 'run_command', arguments: JSON.stringify({ command: 'id -u; cat /proc/self/uid_map; bun test 2>&1 | tail -3' }) }],
        finishReason: 'tool_calls',
      },
      { toolCalls: [{ name: 'finish', arguments: JSON.stringify({ summary: 'Added sum with a test' }) }], finishReason: 'tool_calls' },
    ]
    const client = await connectAgent(`${service.url.replace('http', 'ws')}/ws/agent`, accessToken)
    try {
      client.send({ type: 'agent_command', id: 'c1', command: 'develop', params: { instruction: 'Add sum', checks: ['bun test'] } })
      const ack = await client.next((m) => m.id === 'c1' && (m.type === 'ack' || m.type === 'error'))
      expect(ack.type).toBe('ack')
      const final = await client.next(isFinal(ack.taskId), 120_000)
      expect(final).toMatchObject({ type: 'result', output: { finished: true, checks: [{ command: 'bun test', verdict: 'passed' }] } })
      expect(final.output.files).toEqual([
        { path: 'sum.test.ts', status: 'added' },
        { path: 'sum.ts', status: 'added' },
      ])
      // The command ran as root of a user namespace whose root is the service's uid, never the host's root.
      const told = String(model.completions.at(-1)!.messages.at(-1).content)
      expect(told).toMatch(new RegExp(`^0\\s*\\n\\s*0\\s+${SERVICE_UID}\\s+1$`, 'm'))
      expect(told).toContain(' 0 fail')
      // Not root, the service cannot mount: the workspace is a plain directory, measured while commands run.
      expect(existsSync(join(dataDir, 'agent-workspaces', ack.taskId, 'tree.img'))).toBe(false)
      expect(existsSync(join(dataDir, 'agent-workspaces', ack.taskId, 'tree', 'sum.ts'))).toBe(true)
    } finally {
      client.close()
    }
  })
})
