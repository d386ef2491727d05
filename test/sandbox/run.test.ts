import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SandboxRequestError, type SandboxResult } from '../../src/sandbox/index.ts'
import { makeSandbox, problems } from './support.ts'

const { sandbox, logger } = makeSandbox()

const SECRET_NAME = 'SANDBOX_SUITE_PARENT_SECRET'
const SECRET_VALUE = `parent-only-${crypto.randomUUID()}`

const sumModule = 'export const sum = (a: number, b: number): number => a + b\n'

// Launched together: each run is its own process tree, so they do not wait for one another.
let runs: Record<'passing' | 'failing' | 'javascript' | 'testsPass' | 'testsFail' | 'environment', Promise<SandboxResult>>

beforeAll(() => {
  process.env[SECRET_NAME] = SECRET_VALUE
  runs = {
    passing: sandbox.run({
      language: 'typescript',
      mode: 'run',
      files: {
        'main.ts': "import { sum } from './lib/sum.ts'\nconsole.log('first', sum(2, 3))\nconsole.error('second')\nconsole.log('third')\n",
        'lib/sum.ts': sumModule,
      },
    }),
    failing: sandbox.run({
      language: 'typescript',
      mode: 'run',
      files: {
        'main.ts':
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a program's source, as text
          "function parseAge(raw: string): number {\n  const n = Number(raw)\n  if (Number.isNaN(n)) throw new Error(`not a number: ${raw}`)\n  return n\n}\nconsole.log('before')\nparseAge('forty')\n",
      },
    }),
    javascript: sandbox.run({
      language: 'javascript',
      mode: 'run',
      entry: 'app.mjs',
      files: { 'app.mjs': "console.log(typeof Bun, [1, 2, 3].map((x) => x * 2).join(','))\n" },
    }),
    testsPass: sandbox.run({
      language: 'typescript',
      mode: 'test',
      files: {
        'sum.ts': sumModule,
        'sum.test.ts':
          "import { expect, test } from 'bun:test'\nimport { sum } from './sum.ts'\ntest('adds', () => expect(sum(2, 2)).toBe(4))\ntest('adds negatives', () => expect(sum(-1, -2)).toBe(-3))\n",
      },
    }),
    testsFail: sandbox.run({
      language: 'typescript',
      mode: 'test',
      files: {
        'sum.ts': 'export const sum = (a: number, b: number): number => a - b\n',
        'sum.test.ts': "import { expect, test } from 'bun:test'\nimport { sum } from './sum.ts'\ntest('adds', () => expect(sum(2, 2)).toBe(4))\n",
      },
    }),
    environment: sandbox.run({ language: 'typescript', mode: 'run', files: { 'main.ts': 'console.log(JSON.stringify(process.env))\n' } }),
  }
})

afterAll(async () => {
  delete process.env[SECRET_NAME]
  await sandbox.close()
})

describe('running code', () => {
  test('the sandbox is available on this machine and says what it enforces', () => {
    expect(sandbox.available).toBe(true)
    for (const key of ['isolation', 'network', 'filesystem', 'identity', 'environment', 'processes', 'memory', 'timeout', 'output', 'cleanup'])
      expect(sandbox.enforcement[key]).toBeString()
    expect(sandbox.enforcement.isolation).toContain('network')
  })

  test('a passing program: verdict passed, exit 0, stdout and stderr interleaved in order', async () => {
    const result = await runs.passing
    expect(result).toMatchObject({ verdict: 'passed', exitCode: 0, truncated: false })
    expect(result.output).toBe('first 5\nsecond\nthird\n')
  })

  test('a failing program: verdict failed with the error and its stack trace', async () => {
    const result = await runs.failing
    expect(result.verdict).toBe('failed')
    expect(result.exitCode).toBe(1)
    expect(result.output).toStartWith('before\n')
    expect(result.output).toContain('not a number: forty')
    expect(result.output).toMatch(/at parseAge \(.*main\.ts:3:/)
  })

  test('JavaScript runs too, with the entry the request names', async () => {
    expect(await runs.javascript).toMatchObject({ verdict: 'passed', exitCode: 0, output: 'object 2,4,6\n' })
  })

  test('user tests with bun test: a passing suite', async () => {
    const result = await runs.testsPass
    expect(result.verdict).toBe('passed')
    expect(result.output).toContain('2 pass')
    expect(result.output).toContain('0 fail')
  })

  test('user tests with bun test: a failing suite shows the failed expectation', async () => {
    const result = await runs.testsFail
    expect(result.verdict).toBe('failed')
    expect(result.exitCode).toBe(1)
    expect(result.output).toContain('(fail) adds')
    expect(result.output).toContain('Expected: 4')
    expect(result.output).toContain('Received: 0')
  })

  test("the service's environment is not inherited: a variable set in the parent is invisible", async () => {
    const result = await runs.environment
    expect(result.verdict).toBe('passed')
    expect(process.env[SECRET_NAME]).toBe(SECRET_VALUE)
    expect(result.output).not.toContain(SECRET_VALUE)
    const seen = JSON.parse(result.output) as Record<string, string>
    expect(seen[SECRET_NAME]).toBeUndefined()
    // Only what the sandbox sets, plus what Bun and the shell add for the program itself.
    const expected = new Set(['PATH', 'HOME', 'TMPDIR', 'NO_COLOR', 'LANG', 'BUN_BE_BUN', 'PWD', 'NODE'])
    expect(Object.keys(seen).filter((k) => !expected.has(k) && !k.startsWith('npm_'))).toEqual([])
    expect(seen.HOME).toBe('/tmp/sandbox')
  })

  test('bad requests are refused before anything starts, naming the field', async () => {
    const base = { language: 'typescript' as const, mode: 'run' as const }
    await expect(sandbox.run({ ...base, files: { '../escape.ts': '' } })).rejects.toThrow(SandboxRequestError)
    await expect(sandbox.run({ ...base, files: { 'other.ts': '' } })).rejects.toThrow('entry: "main.ts" is not one of the files')
    await expect(sandbox.run({ ...base, language: 'ruby' as 'typescript', files: { 'main.ts': '' } })).rejects.toThrow(/^language:/)
  })

  test('nothing went wrong behind the scenes', async () => {
    await Promise.all(Object.values(runs))
    expect(problems(logger)).toEqual([])
  })
})
