import { describe, expect, test } from 'bun:test'
import { statSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, describeVariables, loadConfig } from '../src/main/config.ts'
import { defineSettings, integer, loadSettings } from '../src/config.ts'
import { tempDir } from './helpers.ts'

describe('configuration', () => {
  test('starts on documented defaults with no environment at all', () => {
    const dir = tempDir()
    const config = loadConfig({ DATA_DIR: dir.path })
    expect(config.port).toBe(3000)
    expect(config.host).toBe('0.0.0.0')
    expect(config.databaseUrl).toBeUndefined()
    expect(config.bodyLimitBytes).toBe(1024 * 1024)
    expect(config.unconfigured.join(' ')).toContain('OPENAI_API_KEY')
    expect(Object.isFrozen(config)).toBe(true)
    dir.remove()
  })

  test('reports every bad variable at once, by name', () => {
    let error: unknown
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x', DATA_DIR: tempDir().path })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems
    expect(problems).toHaveLength(3)
    expect(problems[0]).toStartWith('PORT must be a whole number')
    expect(problems.some((p) => p.startsWith('LOG_LEVEL must be one of'))).toBe(true)
    expect(problems.some((p) => p.startsWith('DATABASE_URL must use'))).toBe(true)
  })

  test('rejects an out-of-range port and a short JWT secret', () => {
    expect(() => loadConfig({ PORT: '70000', DATA_DIR: tempDir().path })).toThrow('PORT must be between')
    expect(() => loadConfig({ JWT_SECRET: 'short', DATA_DIR: tempDir().path })).toThrow('JWT_SECRET must be at least 32')
  })

  test('generates missing secrets once, into a 0600 file, and reuses them', () => {
    const dir = tempDir()
    const first = loadConfig({ DATA_DIR: dir.path })
    expect(first.generatedSecrets).toEqual(['JWT_SECRET', 'TOKEN_ENCRYPTION_KEY'])
    const file = join(dir.path, 'secrets.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const second = loadConfig({ DATA_DIR: dir.path })
    expect(second.secrets).toEqual(first.secrets)
    expect(JSON.parse(readFileSync(file, 'utf8')).jwtSecret).toBe(first.secrets.jwtSecret)
    dir.remove()
  })

  test('a secret given in the environment wins and is not written to disk', () => {
    const dir = tempDir()
    const jwtSecret = 'x'.repeat(40)
    const config = loadConfig({ DATA_DIR: dir.path, JWT_SECRET: jwtSecret })
    expect(config.secrets.jwtSecret).toBe(jwtSecret)
    expect(config.generatedSecrets).toEqual(['TOKEN_ENCRYPTION_KEY'])
    expect(readFileSync(join(dir.path, 'secrets.json'), 'utf8')).not.toContain(jwtSecret)
    dir.remove()
  })

  test('is frozen all the way down', () => {
    const config = loadConfig({ DATA_DIR: tempDir().path })
    for (const part of [config.chat, config.plans.ids, config.integrations.github, config.payments.prices.month, config.secrets])
      expect(Object.isFrozen(part)).toBe(true)
  })

  test("a bad value is reported and its default stands in, so its slice's own checks still report", () => {
    let error: unknown
    try {
      loadConfig({ STRIPE_API_URL: 'ftp://stripe.example', PLAN_PRICES: 'gold=price_x', DATA_DIR: tempDir().path })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual([
      expect.stringContaining('STRIPE_API_URL must use http: or https:'),
      'PLAN_PRICES names plan "gold", which is not in PLANS (free, pro, team, enterprise)',
    ])
  })

  test('a plugin slice may not declare a variable another slice declares', () => {
    const clash = defineSettings({ title: 'Clash', variables: { PORT: { doc: 'again', parse: integer(0, 1) } }, build: () => ({}) })
    expect(() => loadSettings([clash], { DATA_DIR: tempDir().path })).toThrow('PORT is declared by both "Server" and "Clash"')
  })

  test('every variable is documented on the configuration page with its default, and the README links there', () => {
    const root = join(import.meta.dir, '..')
    const page = readFileSync(join(root, 'docs', 'configuration.mdx'), 'utf8')
    // `| \`NAME\` | default | meaning |`; test/docs/configuration-tables.test.ts checks each table against the declarations.
    const undocumented = describeVariables()
      .map((v) => v.name)
      .filter((name) => !new RegExp(`^\\| \`${name}\` \\| [^|\\s][^|]* \\| `, 'm').test(page))
    expect(undocumented).toEqual([])
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('(docs/configuration.mdx)')
  })
})
