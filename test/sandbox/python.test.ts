/**
 * Python in the sandbox: parsed inside it by its own python3 before anything runs (a syntax error is the verdict
 * syntax_error, with the parser's message), then run as __main__ or tested with unittest, with every limit of a
 * TypeScript run. No Python of the host parses the code.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { makeSandbox, startWitness } from './support.ts'

const { sandbox } = makeSandbox()
const witness = startWitness()
afterAll(async () => {
  await sandbox.close()
  witness.stop()
})
const python = Bun.which('python3', { PATH: '/usr/local/bin:/usr/bin:/bin' })
if (!python) console.warn('[skip] Python in the sandbox: python3 is not installed')

describe.if(python !== null)('Python runs', () => {
  test('a program runs as __main__ and its output and exit status come back', async () => {
    const ok = await sandbox.run({
      language: 'python',
      mode: 'run',
      files: { 'main.py': 'import sys\nprint("hello", sys.argv[0])\nprint("warn", file=sys.stderr)\n' },
    })
    expect(ok).toMatchObject({ verdict: 'passed', exitCode: 0 })
    expect(ok.output).toBe('hello main.py\nwarn\n')
    const failed = await sandbox.run({ language: 'python', mode: 'run', files: { 'main.py': 'raise ValueError("boom")\n' } })
    expect(failed).toMatchObject({ verdict: 'failed', exitCode: 1 })
    expect(failed.output).toContain('ValueError: boom')
    // Its own exit status 86 with no parser message is a failure, not a syntax error.
    expect(await sandbox.run({ language: 'python', mode: 'run', files: { 'main.py': 'import sys\nsys.exit(86)\n' } })).toMatchObject({
      verdict: 'failed',
      exitCode: 86,
    })
  })

  test('a syntax error in any file is found before the program runs, with the file, the line and a caret', async () => {
    const result = await sandbox.run({ language: 'python', mode: 'run', files: { 'main.py': 'print("ran")\n', 'lib/util.py': 'def f(:\n    pass\n' } })
    expect(result).toMatchObject({ verdict: 'syntax_error', exitCode: null })
    expect(result.output).toStartWith('lib/util.py:1:7: SyntaxError: invalid syntax')
    expect(result.output).toContain('  def f(:\n        ^')
    expect(result.output).not.toContain('ran')
  })

  test('test mode runs the unittest tests it finds; none found is a failure', async () => {
    const files = {
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n',
    }
    const failing = await sandbox.run({ language: 'python', mode: 'test', files })
    expect(failing.verdict).toBe('failed')
    expect(failing.output).toContain('AssertionError: -1 != 5')
    const passing = await sandbox.run({ language: 'python', mode: 'test', files: { ...files, 'calc.py': 'def add(a, b):\n    return a + b\n' } })
    expect(passing.verdict).toBe('passed')
    expect(passing.output).toContain('Ran 1 test')
    expect((await sandbox.run({ language: 'python', mode: 'test', files: { 'calc.py': 'x = 1\n' } })).verdict).toBe('failed')
  })

  test('the limits hold: no network, the time limit, no environment of the service', async () => {
    const port = new URL(witness.url).port
    const network = await sandbox.run({
      language: 'python',
      mode: 'run',
      files: {
        'main.py': `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=2)\n    print("REACHED")\nexcept OSError as e:\n    print("BLOCKED", e.errno)\n`,
      },
    })
    expect(network.output).toContain('BLOCKED')
    expect(witness.hits()).toBe(0)
    const forever = await sandbox.run({ language: 'python', mode: 'run', files: { 'main.py': 'while True:\n    pass\n' }, timeoutMs: 1000 })
    expect(forever.verdict).toBe('timeout')
    const env = await sandbox.run({ language: 'python', mode: 'run', files: { 'main.py': 'import os\nprint(sorted(os.environ))\n' } })
    expect(env.output).not.toContain('JWT_SECRET')
    expect(env.output).not.toContain('PYTHONPATH')
  })
})
