import { afterAll, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { tempDir } from './helpers.ts'

// What a production machine does with the project: `npm ci --omit=dev && npm start`, with no dev tool installed. It
// needs the package registry (or npm's cache), so it is skipped, saying why, when `npm ping` gets no answer.
const ROOT = join(import.meta.dir, '..')
const INSTALL_TIMEOUT_MS = 8 * 60_000

/** The environment without what an outer `npm run` or `npm test` set (npm_config_*), so the install is npm's default. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith('npm_')) env[name] = value
  return { ...env, ...extra }
}

// The install itself takes minutes (some 500 packages, 700 MB): it runs when PRODUCTION_INSTALL_TEST=1 is set. What it
// depends on, that every package the service imports is a production dependency, is checked on every run below.
const wanted = process.env.PRODUCTION_INSTALL_TEST === '1'
const ping = wanted ? Bun.spawnSync(['npm', 'ping'], { env: cleanEnv(), stdout: 'pipe', stderr: 'pipe', timeout: 20_000 }) : undefined
const registryAnswers = ping?.exitCode === 0
if (!wanted) console.warn('[skip] production install (npm ci --omit=dev && npm start): PRODUCTION_INSTALL_TEST is not set')
else if (!registryAnswers) console.warn('[skip] production install: npm ping got no answer from the package registry (offline?)')

/** The packages the service's own code imports (src/ and plugins/), by name, each with one file that imports it. */
async function importedPackages(): Promise<Map<string, string>> {
  const found = new Map<string, string>()
  const scanners = { ts: new Bun.Transpiler({ loader: 'ts' }), tsx: new Bun.Transpiler({ loader: 'tsx' }) }
  for (const pattern of ['src/**/*.ts', 'plugins/**/*.ts', 'plugins/**/*.tsx'])
    for await (const file of new Bun.Glob(pattern).scan(ROOT)) {
      const scanner = file.endsWith('.tsx') ? scanners.tsx : scanners.ts
      for (const { path } of scanner.scanImports(await Bun.file(join(ROOT, file)).text())) {
        if (path.startsWith('.') || path.startsWith('node:') || path === 'bun' || path.startsWith('bun:')) continue
        const name = path.startsWith('@') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]!
        if (!found.has(name)) found.set(name, file)
      }
    }
  return found
}

test('what npm ci --omit=dev installs is what the server needs: Bun and every package src/ and plugins/ import', async () => {
  const pkg = (await Bun.file(join(ROOT, 'package.json')).json()) as {
    scripts: Record<string, string>
    dependencies: Record<string, string>
  }
  const lock = (await Bun.file(join(ROOT, 'package-lock.json')).json()) as { packages: Record<string, { dev?: boolean }> }
  expect(pkg.scripts.start!.split(' ')[0]).toBe('bun')
  expect(pkg.dependencies.bun).toBeString()
  expect(lock.packages['node_modules/bun']?.dev).toBeUndefined()
  const imported = await importedPackages()
  expect(imported.size).toBeGreaterThan(20)
  const onlyInDev = [...imported].filter(([name]) => !(name in pkg.dependencies)).map(([name, file]) => `${name} (imported by ${file})`)
  expect(onlyInDev).toEqual([])
  for (const name of imported.keys()) expect({ name, dev: lock.packages[`node_modules/${name}`]?.dev }).toEqual({ name, dev: undefined })
})

/** The project as a checkout holds it (tracked and new files, not ignored ones), without tests, benchmarks or node_modules. */
function copyProject(to: string) {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
  expect(listed.exitCode).toBe(0)
  for (const file of listed.stdout.toString().split('\0')) {
    if (file === '' || /^(test|bench|node_modules)\//.test(file) || !existsSync(join(ROOT, file))) continue
    mkdirSync(dirname(join(to, file)), { recursive: true })
    copyFileSync(join(ROOT, file), join(to, file))
  }
}

test.if(registryAnswers)(
  'npm ci --omit=dev && npm start serves /health from a copy of the project, with Bun installed and no dev tool',
  async () => {
    const dir = tempDir('production-install-')
    afterAll(() => dir.remove())
    const project = join(dir.path, 'project')
    copyProject(project)

    // Bun's own postinstall must run (it puts the binary in place), so no --ignore-scripts.
    const install = Bun.spawn(['npm', 'ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: project,
      env: cleanEnv(),
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: INSTALL_TIMEOUT_MS,
    })
    const installOutput = `${await new Response(install.stdout).text()}${await new Response(install.stderr).text()}`
    expect(await install.exited, installOutput.slice(-5000)).toBe(0)
    expect(installOutput).not.toContain('ERESOLVE')
    expect(existsSync(join(project, 'node_modules', '.bin', 'bun'))).toBe(true)
    for (const devTool of ['@biomejs/biome', 'playwright-core', 'bun-types']) expect(existsSync(join(project, 'node_modules', devTool))).toBe(false)

    // npm runs the start script through a shell: its own process group, so the server stops with it by one PID.
    const server = Bun.spawn(['npm', 'start'], {
      cwd: project,
      env: cleanEnv({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(dir.path, 'data') }),
      stdout: 'pipe',
      stderr: 'pipe',
      detached: true,
    })
    const stopGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-server.pid, signal)
      } catch {
        // Already gone.
      }
    }
    try {
      // The first `listening` log line carries the port the kernel chose.
      const reader = server.stdout.getReader()
      let buffered = ''
      let url: string | undefined
      while (!url) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`npm start exited: ${buffered}${await new Response(server.stderr).text()}`)
        buffered += new TextDecoder().decode(value)
        url = /"msg":"listening","url":"(http:[^"]+)"/.exec(buffered)?.[1]
      }
      reader.releaseLock()
      const health = await fetch(`${url}/health`)
      expect(health.status).toBe(200)
      expect(await health.json()).toMatchObject({ status: 'ok' })
      stopGroup('SIGTERM')
      await server.exited
      await expect(fetch(`${url}/health`)).rejects.toThrow()
    } finally {
      stopGroup('SIGKILL')
    }
  },
  INSTALL_TIMEOUT_MS + 60_000,
)
