import { expect, test } from 'bun:test'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')

// Formatting and lint are Biome's (biome.jsonc): `npm run format` writes what this checks.
test('npm run lint finds no formatting or lint problems', () => {
  const check = Bun.spawnSync(['npm', 'run', '--silent', 'lint'], {
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  })
  expect(check.exitCode, `${check.stdout.toString()}${check.stderr.toString()}`.slice(-20_000)).toBe(0)
}, 120_000)
