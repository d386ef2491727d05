import { expect, test } from 'bun:test'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
// Whole-project checks: minutes when two other files of the suite share a loaded two-core machine with them.
const CHECK_MS = 300_000

/** Runs `npm run <script>` in the project, its own tools first on the PATH; answers the exit code and output. */
function npmRun(script: string) {
  const run = Bun.spawnSync(['npm', 'run', '--silent', script], {
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  })
  return { exitCode: run.exitCode, output: `${run.stdout.toString()}${run.stderr.toString()}`.slice(-20_000) }
}

// The suite runs TypeScript without checking its types; this runs the project's own check, every tsconfig of it.
test(
  'npm run typecheck finds no type errors',
  () => {
    const { exitCode, output } = npmRun('typecheck')
    expect(exitCode, output).toBe(0)
  },
  CHECK_MS,
)

// Formatting and lint are Biome's (biome.jsonc): `npm run format` writes what this checks.
test(
  'npm run lint finds no formatting or lint problems',
  () => {
    const { exitCode, output } = npmRun('lint')
    expect(exitCode, output).toBe(0)
  },
  CHECK_MS,
)
