/**
 * Several processes starting on one PostgreSQL database with no user: each stores and logs its own code, any
 * stored code works at any process, and only once, since the first owner ends the setup for all of them.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { SETUP_LOG_MESSAGE } from '../../plugins/setup/service.ts'
import { announceSkip, freshPostgres, postgresUrl, tempDir } from '../helpers.ts'
import { startServiceProcess, type ServiceProcess } from '../scale-out/cluster.ts'
import { OWNER } from './support.ts'

if (!postgresUrl) announceSkip('first run of several processes on one PostgreSQL database', 'DATABASE_URL')

describe.skipIf(!postgresUrl)('first run of two processes sharing PostgreSQL', () => {
  const dataDir = tempDir('svc-first-run-pg-')
  const processes: ServiceProcess[] = []
  let drop: (() => Promise<void>) | undefined
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill()))
    await drop?.()
    dataDir.remove()
  })

  const setUp = (via: ServiceProcess, code: unknown, email: string) =>
    via.request('/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...OWNER, code, email }) })

  test('each process logs its own code; either works once, at either process', async () => {
    const pg = (await freshPostgres())!
    drop = pg.drop
    const env = {
      DATABASE_URL: pg.url,
      DATA_DIR: dataDir.path,
      JWT_SECRET: `first-run-secret-${crypto.randomUUID()}`,
      TOKEN_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    }
    // Started together, as an orchestrator starts replicas.
    processes.push(...(await Promise.all([startServiceProcess('first-run-a', env), startServiceProcess('first-run-b', env)])))
    const [a, b] = processes as [ServiceProcess, ServiceProcess]
    const [codeA, codeB] = await Promise.all([a, b].map(async (p) => (await p.waitForLog((line) => line.msg === SETUP_LOG_MESSAGE)).setupCode))
    expect(codeA).not.toBe(codeB)
    for (const p of [a, b]) expect(p.logs.filter((line) => line.msg === SETUP_LOG_MESSAGE)).toHaveLength(1)

    // B's code, used at A.
    const created = await setUp(a, codeB, OWNER.email)
    expect(created.status).toBe(201)
    // A's code was stored too, but the owner exists now: refused at B, and B's setup is closed.
    const late = await setUp(b, codeA, 'late@example.com')
    expect(late.status).toBe(410)
    expect((await late.json()).code).toBe('setup_done')
    for (const p of [a, b]) {
      expect((await p.request('/setup')).status).toBe(410)
      const login = await p.request('/auth/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: OWNER.email, password: OWNER.password }),
      })
      expect(login.status).toBe(200)
    }
  })
})
