import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/main/config.ts'
import { configuredLimits, DEFAULT_SANDBOX_LIMITS, MIN_SANDBOX_LIMITS, resolveLimits } from '../../src/sandbox/limits.ts'
import { filePathProblem, SandboxRequestError, validateFiles } from '../../src/sandbox/workspace.ts'

describe('limits', () => {
  const configured = configuredLimits({ timeoutMs: 5000, memoryMb: 200, maxOutputBytes: 10_000, maxProcesses: 40 })

  test('a request may lower a limit but never raise it', () => {
    expect(resolveLimits(configured, { timeoutMs: 1000, memoryMb: 999, maxOutputBytes: 2048, maxProcesses: 1000 })).toEqual({
      timeoutMs: 1000,
      memoryMb: 200,
      maxOutputBytes: 2048,
      maxProcesses: 40,
    })
  })

  test('nothing asked means the configured limits; too little is raised to what Bun needs', () => {
    expect(resolveLimits(configured, {})).toEqual(configured)
    expect(resolveLimits(configured, { timeoutMs: 1, memoryMb: 1, maxOutputBytes: 1, maxProcesses: 1 })).toEqual(MIN_SANDBOX_LIMITS)
    expect(resolveLimits(configured, { timeoutMs: Number.NaN })).toEqual(configured)
  })

  test('defaults match the SANDBOX_* variables, which reach Config.sandbox', () => {
    expect(configuredLimits()).toEqual(DEFAULT_SANDBOX_LIMITS)
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-config-'))
    const config = loadConfig({ DATA_DIR: dir })
    expect(config.sandbox).toEqual(DEFAULT_SANDBOX_LIMITS)
    const set = loadConfig({
      DATA_DIR: dir,
      SANDBOX_TIMEOUT_MS: '2500',
      SANDBOX_MEMORY_MB: '64',
      SANDBOX_MAX_OUTPUT_BYTES: '4096',
      SANDBOX_MAX_PROCESSES: '20',
    })
    expect(set.sandbox).toEqual({ timeoutMs: 2500, memoryMb: 64, maxOutputBytes: 4096, maxProcesses: 20 })
    expect(() => loadConfig({ DATA_DIR: dir, SANDBOX_MEMORY_MB: '8' })).toThrow(/SANDBOX_MEMORY_MB/)
    rmSync(dir, { recursive: true, force: true })
  })
})

describe('file paths', () => {
  test('relative paths inside the run directory are accepted', () => {
    for (const path of ['main.ts', 'src/util.ts', 'a/b/c.test.ts', '.env', 'x..y.ts']) expect(filePathProblem(path)).toBeUndefined()
  })

  test('paths that could leave the directory or confuse it are refused with a reason', () => {
    expect(filePathProblem('../etc/passwd')).toContain('..')
    expect(filePathProblem('a/../../b')).toContain('..')
    expect(filePathProblem('/etc/passwd')).toContain('relative')
    expect(filePathProblem('a//b')).toContain('empty')
    expect(filePathProblem('./a')).toContain('"."')
    expect(filePathProblem('')).toContain('empty')
    expect(filePathProblem('a\\..\\b')).toContain('backslash')
  })

  test('validateFiles names the offending file', () => {
    expect(() => validateFiles({ 'main.ts': '', '../x.ts': '' })).toThrow(new SandboxRequestError('files.../x.ts', 'must not contain ".."'))
    expect(() => validateFiles({ a: '', 'a/b.ts': '' })).toThrow(/files\.a: is a file/)
    expect(() => validateFiles({ 'main.ts': 42 as unknown as string })).toThrow(/content must be a string/)
  })
})
