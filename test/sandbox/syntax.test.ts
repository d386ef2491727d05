import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import { makeSandbox } from './support.ts'

const { sandbox } = makeSandbox()
afterAll(() => sandbox.close())

describe('checkSyntax', () => {
  test('valid TypeScript and JavaScript pass', () => {
    expect(sandbox.checkSyntax('typescript', 'export const add = (a: number, b: number): number => a + b\n')).toEqual({ ok: true })
    expect(sandbox.checkSyntax('javascript', 'export const add = (a, b) => a + b\nawait Promise.resolve()\n')).toEqual({ ok: true })
  })

  test('a syntax error comes back with its position and line, without starting a process', () => {
    const spawn = spyOn(Bun, 'spawn')
    const spawnSync = spyOn(Bun, 'spawnSync')
    try {
      const result = sandbox.checkSyntax('typescript', 'const total: number = 1\nconst broken = (1 + ;\n')
      expect(result.ok).toBe(false)
      if (result.ok) return
      expect(result.message).toContain('input.ts:2:')
      expect(result.message).toContain('Unexpected ;')
      expect(result.message).toContain('const broken = (1 + ;')
      expect(spawn).not.toHaveBeenCalled()
      expect(spawnSync).not.toHaveBeenCalled()
    } finally {
      spawn.mockRestore()
      spawnSync.mockRestore()
    }
  })

  test('type annotations are a syntax error in JavaScript, not in TypeScript', () => {
    const code = 'const n: number = 1\n'
    expect(sandbox.checkSyntax('typescript', code).ok).toBe(true)
    const js = sandbox.checkSyntax('javascript', code)
    expect(js.ok).toBe(false)
    if (!js.ok) expect(js.message).toContain('input.js:1:')
  })

  test('run() reports syntax_error for the broken file and launches nothing', async () => {
    const spawn = spyOn(Bun, 'spawn')
    try {
      const result = await sandbox.run({
        language: 'typescript',
        mode: 'test',
        files: { 'sum.ts': 'export const sum = (a: number, b: number) => a + b\n', 'sum.test.ts': 'import { test } from "bun:test"\ntest("x", () => {\n' },
      })
      expect(result.verdict).toBe('syntax_error')
      expect(result.exitCode).toBeNull()
      expect(result.output).toContain('sum.test.ts:')
      expect(spawn).not.toHaveBeenCalled()
    } finally {
      spawn.mockRestore()
    }
  })
})
