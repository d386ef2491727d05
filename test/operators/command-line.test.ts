/** --help, --version and unknown flags, on the service (from source and compiled) and on the operator commands. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import { buildExecutable, tempDir } from '../helpers.ts'
import { closedPort, fromSource, runToEnd } from './processes.ts'

const dir = tempDir('operators-cli-')
const executable = join(dir.path, 'server')
// Storage that cannot be reached: a command that answers anyway never opened it.
const unreachable = { DATA_DIR: join(dir.path, 'data'), DATABASE_URL: `postgres://ops:hunter2@127.0.0.1:${closedPort()}/service` }

beforeAll(() => {
  const build = buildExecutable(executable)
  if (build.exitCode !== 0) throw new Error(build.stderr.toString())
})
afterAll(() => dir.remove())

const variants = [
  // From source, usage lines give the start script's command, Bun's flag for large request heads included.
  { name: 'bun src/main/index.ts', command: (args: string[]) => fromSource(args), program: pkg.scripts.start },
  { name: 'the compiled executable', command: (args: string[]) => [executable, ...args], program: 'server' },
]

for (const variant of variants)
  describe(`${variant.name}`, () => {
    test('--help prints how to run it, its commands, the main variables and where the rest are, and exits 0 without starting', async () => {
      for (const flag of ['--help', '-h']) {
        const run = await runToEnd(variant.command([flag]), unreachable)
        expect(run.exitCode).toBe(0)
        expect(run.stdout).toContain(`${variant.program} admin COMMAND`)
        expect(run.stdout).toContain('--version')
        for (const variable of ['PORT', 'DATA_DIR', 'DATABASE_URL', 'REDIS_URL', 'METRICS_TOKEN', 'OTEL_EXPORTER_OTLP_ENDPOINT'])
          expect(run.stdout).toContain(variable)
        expect(run.stdout).toContain('docs/configuration.mdx')
        expect(run.stdout).toContain('78')
        expect(run.stderr).toBe('')
      }
    })

    test('--version prints the name and version and exits 0', async () => {
      for (const flag of ['--version', '-V']) {
        const run = await runToEnd(variant.command([flag]), unreachable)
        expect(run.exitCode).toBe(0)
        expect(run.stdout.trim()).toBe(`${pkg.name} ${pkg.version} (Bun ${Bun.version})`)
      }
    })

    test('an unknown flag or command exits 2 with a message naming it, and starts nothing', async () => {
      const flag = await runToEnd(variant.command(['--port=8080']), unreachable)
      expect(flag.exitCode).toBe(2)
      expect(flag.stderr).toContain('unknown option --port=8080')
      // Settings are variables; the message says which one.
      expect(flag.stderr).toContain('set PORT instead')
      expect(flag.stdout).toBe('')
      const other = await runToEnd(variant.command(['--verbose']), unreachable)
      expect(other.exitCode).toBe(2)
      expect(other.stderr).toContain('unknown option --verbose')
      const command = await runToEnd(variant.command(['serve']), unreachable)
      expect(command.exitCode).toBe(2)
      expect(command.stderr).toContain('unknown command "serve"')
    })

    test('admin --help lists the operator commands and exits 0 without opening storage', async () => {
      const run = await runToEnd(variant.command(['admin', '--help']), unreachable)
      expect(run.exitCode).toBe(0)
      expect(run.stdout).toContain(`${variant.program} admin COMMAND`)
      for (const command of ['orgs list', 'users create', 'audit verify']) expect(run.stdout).toContain(command)
      expect(run.stderr).toBe('')
    })
  })

describe('npm run admin (bun src/main/cli.ts)', () => {
  const admin = (args: string[]) => runToEnd(fromSource(args, 'src/main/cli.ts'), unreachable)

  test('--help prints the commands and exit codes and exits 0, with no stack trace and no storage opened', async () => {
    const run = await admin(['--help'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toContain('npm run admin -- COMMAND')
    expect(run.stdout).toContain('orgs create --name NAME')
    expect(run.stdout).toContain('Exit codes')
    expect(run.stderr).toBe('')
    // Help after a command is still help.
    expect((await admin(['users', 'create', '--help'])).exitCode).toBe(0)
  })

  test('--version prints the version and exits 0', async () => {
    const run = await admin(['--version'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout.trim()).toBe(`${pkg.name} ${pkg.version} (Bun ${Bun.version})`)
  })

  test('an unknown flag, a flag without its value or no command exits 2 with a message and the usage, before storage is opened', async () => {
    for (const args of [['orgs', 'list', '--colour'], ['orgs', 'create', '--name'], []]) {
      const run = await admin(args)
      expect(run.exitCode).toBe(2)
      expect(run.stderr).toStartWith('error: ')
      expect(run.stderr).toContain('Operator commands:')
      expect(run.stderr).not.toContain('    at ')
    }
    expect((await admin(['orgs', 'list', '--colour'])).stderr).toContain("'--colour'")
    expect((await admin([])).stderr).toContain('no command given')
  })
})
