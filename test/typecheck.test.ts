import { expect, test } from 'bun:test'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')

// The suite runs TypeScript without checking its types; this runs the project's own check, every tsconfig of it.
test('npm run typecheck finds no type errors', () => {
  const check = Bun.spawnSync(['npm', 'run', '--silent', 'typecheck'], {
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  })
  expect(check.exitCode, `${check.stdout.toString()}${check.stderr.toString()}`).toBe(0)
}, 120_000)
