/**
 * PostgreSQL or Redis that cannot be reached at start-up: the process says which variable, which host:port and
 * why, never the password, and exits 78 (EX_CONFIG), which tells systemd not to restart it in a loop.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir } from '../helpers.ts'
import { closedPort, fromSource, runToEnd } from './processes.ts'

const dir = tempDir('operators-startup-')
afterAll(() => dir.remove())
const dataDir = join(dir.path, 'data')
const password = 'correct-horse-battery'

const commands = [
  { name: 'the service', command: fromSource([]) },
  { name: 'an operator command', command: fromSource(['admin', 'orgs', 'list']) },
]

for (const { name, command } of commands)
  describe(name, () => {
    test('exits 78 naming DATABASE_URL and its host:port, without the password, when nothing listens there', async () => {
      const port = closedPort()
      const run = await runToEnd(command, { DATA_DIR: dataDir, DATABASE_URL: `postgres://service:${password}@127.0.0.1:${port}/service` })
      expect(run.exitCode).toBe(78)
      expect(run.stderr).toContain(`DATABASE_URL: cannot use PostgreSQL at 127.0.0.1:${port}: the connection was refused`)
      expect(run.stderr + run.stdout).not.toContain(password)
      expect(run.stderr).not.toContain('ERR_POSTGRES')
      expect(run.stderr).not.toContain('    at ')
    })

    test('exits 78 naming REDIS_URL and its host:port, without the password, when nothing listens there', async () => {
      const port = closedPort()
      const run = await runToEnd(command, { DATA_DIR: dataDir, REDIS_URL: `redis://:${password}@127.0.0.1:${port}` })
      expect(run.exitCode).toBe(78)
      expect(run.stderr).toContain(`REDIS_URL: cannot use Redis at 127.0.0.1:${port}: the connection was refused or closed`)
      expect(run.stderr + run.stdout).not.toContain(password)
      expect(run.stderr).not.toContain('    at ')
    })
  })

test('a host name that does not resolve is named as such, with the default port filled in', async () => {
  const run = await runToEnd(fromSource([]), { DATA_DIR: dataDir, DATABASE_URL: `postgresql://service:${password}@db.invalid/service` })
  expect(run.exitCode).toBe(78)
  expect(run.stderr).toContain('DATABASE_URL: cannot use PostgreSQL at db.invalid:5432: the host name db.invalid does not resolve')
  expect(run.stderr).not.toContain(password)
})

test('a server that answers but refuses the database is named with its own reason', async () => {
  const url = process.env.DATABASE_URL
  if (!url) return console.warn('[skip] PostgreSQL refusal: DATABASE_URL is not set')
  const missing = new URL(url)
  missing.pathname = '/no_such_database_for_this_test'
  const run = await runToEnd(fromSource([]), { DATA_DIR: dataDir, DATABASE_URL: missing.toString() })
  expect(run.exitCode).toBe(78)
  expect(run.stderr).toContain(
    `DATABASE_URL: cannot use PostgreSQL at ${missing.hostname}:${missing.port || 5432}: database "no_such_database_for_this_test" does not exist`,
  )
})

test('an invalid variable still exits 78 with every problem listed', async () => {
  const run = await runToEnd(fromSource([]), { DATA_DIR: dataDir, METRICS_PORT: 'ninety', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' })
  expect(run.exitCode).toBe(78)
  expect(run.stderr).toContain('METRICS_PORT must be a whole number')
  expect(run.stderr).toContain('OTEL_EXPORTER_OTLP_HEADERS is set but OTEL_EXPORTER_OTLP_ENDPOINT is not')
})
