import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { memoryLogger } from '../src/log.ts'
import { createSandbox } from '../src/sandbox/index.ts'
import { buildExecutable, tempDir } from './helpers.ts'

test('npm run build produces one executable that serves /health and the playground, draws PDFs and runs sandboxed code', async () => {
  const dir = tempDir('compile-')
  afterAll(() => dir.remove())
  const outfile = join(dir.path, 'server')
  const build = buildExecutable(outfile)
  expect(build.exitCode, build.stderr.toString()).toBe(0)

  const proc = Bun.spawn([outfile], {
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(dir.path, 'data') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  try {
    // The first `listening` log line carries the port the kernel chose.
    const reader = proc.stdout.getReader()
    let buffered = ''
    let url: string | undefined
    while (!url) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`server exited: ${await new Response(proc.stderr).text()}`)
      buffered += new TextDecoder().decode(value)
      url = /"msg":"listening","url":"(http:[^"]+)"/.exec(buffered)?.[1]
    }
    const res = await fetch(`${url}/health`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ status: 'ok' })
    // PDFs are drawn inside the executable: the PDF library reads no file of its own at run time.
    const pdf = await fetch(`${url}/docs/errors.pdf`)
    expect(pdf.status).toBe(200)
    expect(pdf.headers.get('content-type')).toBe('application/pdf')
    expect(new TextDecoder().decode((await pdf.bytes()).slice(0, 5))).toBe('%PDF-')
    // The playground's page and its script, the AI SDK's chat client bundled at build time, are inside too.
    const playground = await fetch(`${url}/playground`)
    expect(playground.status).toBe(200)
    expect(await playground.text()).toContain('<script type="module" src="/playground/app.js">')
    const script = await fetch(`${url}/playground/app.js`)
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(await script.text()).toContain('vercel.ai.error')
    proc.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
  } finally {
    proc.kill('SIGKILL')
  }

  // The same executable carries the operator command line.
  const env = { PATH: process.env.PATH ?? '', DATA_DIR: join(dir.path, 'data'), LOG_LEVEL: 'warn' }
  const created = Bun.spawnSync([outfile, 'admin', 'orgs', 'create', '--name', 'Compiled Co', '--plan', 'team'], { cwd: dir.path, env })
  expect(created.exitCode, created.stderr.toString()).toBe(0)
  const orgId = created.stdout.toString().trim()
  const listed = Bun.spawnSync([outfile, 'admin', 'orgs', 'list'], { cwd: dir.path, env })
  expect(listed.stdout.toString()).toContain(`${orgId}\tteam\tCompiled Co`)
  const wrong = Bun.spawnSync([outfile, 'admin', 'orgs', 'create'], { cwd: dir.path, env })
  expect(wrong.exitCode).toBe(2)

  // In the executable the sandbox's runtime is the executable itself: it must run code as Bun, not start a server.
  const limits = { timeoutMs: 8000, memoryMb: 128, maxOutputBytes: 64 * 1024, maxProcesses: 32 }
  const fromSource = createSandbox({ bunPath: process.execPath, defaults: limits, logger: memoryLogger() })
  const sandbox = createSandbox({ bunPath: outfile, defaults: limits, logger: memoryLogger() })
  try {
    // Where the machine allows a sandbox at all, the executable's must be available too.
    expect(sandbox.available).toBe(fromSource.available)
    if (sandbox.available) {
      const result = await sandbox.run({ language: 'typescript', mode: 'run', files: { 'main.ts': 'console.log(6 * 7)\n' } })
      expect(result.verdict).toBe('passed')
      expect(result.output.trim()).toBe('42')
    } else console.warn(`[skip] sandbox run inside the executable: this machine refuses the sandbox (${fromSource.enforcement.isolation})`)
  } finally {
    await Promise.all([sandbox.close(), fromSource.close()])
  }
}, 120_000)
