/** The Dockerfile: built with npm, run as the single executable on a slim Debian, stopped with SIGTERM. */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { dockerArgs, dockerEnv, dockerStages, readDeploymentFile, ROOT } from './files.ts'

const stages = dockerStages(readDeploymentFile('Dockerfile'))
const [build, runtime] = stages as [(typeof stages)[0], (typeof stages)[0]]
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }

test('two stages: the build installs with npm ci and runs npm run build, which compiles dist/server', () => {
  expect(stages.length).toBe(2)
  const runs = dockerArgs(build, 'RUN')
  expect(runs.some((r) => r.startsWith('npm ci'))).toBe(true)
  expect(runs).toContain('npm run build')
  expect(packageJson.scripts.build).toContain('--compile')
  const outfile = /--outfile\s+(\S+)/.exec(packageJson.scripts.build!)![1]!
  const workdir = dockerArgs(build, 'WORKDIR')[0]!
  const copied = dockerArgs(runtime, 'COPY').find((c) => c.startsWith(`--from=${build.name}`))!
  expect(copied.split(/\s+/)[1]).toBe(`${workdir}/${outfile}`)
  // What the build copies exists in the project.
  for (const copy of dockerArgs(build, 'COPY')) {
    const sources = copy.split(/\s+/).slice(0, -1)
    for (const source of sources) expect(existsSync(join(ROOT, source))).toBe(true)
  }
})

test('the runtime is a slim Debian with CA certificates, the sandbox tools and the runtimes agent commands call, and runs as a non-root user', () => {
  expect(runtime.from).toMatch(/^debian:[\w.-]+-slim$/)
  const install = dockerArgs(runtime, 'RUN').find((r) => r.includes('apt-get install'))!
  for (const pkg of ['ca-certificates', 'util-linux', 'git', 'nodejs', 'python3']) expect(install.split(/\s+/)).toContain(pkg)
  expect(install).toContain('--no-install-recommends')
  const user = dockerArgs(runtime, 'USER')[0]!
  expect(['root', '0']).not.toContain(user)
})

test('DATA_DIR is a volume owned by that user; PORT is exposed; HOST listens on every interface of the container', () => {
  const env = dockerEnv(runtime)
  expect(dockerArgs(runtime, 'VOLUME')).toEqual([env.DATA_DIR!])
  expect(dockerArgs(runtime, 'RUN').some((r) => r.includes(`-o ${dockerArgs(runtime, 'USER')[0]} `) && r.includes(env.DATA_DIR!))).toBe(true)
  expect(dockerArgs(runtime, 'EXPOSE')).toEqual([env.PORT!])
  expect(env.HOST).toBe('0.0.0.0')
})

test('SIGTERM reaches the service: STOPSIGNAL SIGTERM and an exec-form ENTRYPOINT', () => {
  expect(dockerArgs(runtime, 'STOPSIGNAL')).toEqual(['SIGTERM'])
  const entrypoint = JSON.parse(dockerArgs(runtime, 'ENTRYPOINT')[0]!) as string[]
  expect(Array.isArray(entrypoint)).toBe(true)
  expect(entrypoint.length).toBe(1)
  expect(dockerArgs(runtime, 'CMD')).toEqual([])
})
