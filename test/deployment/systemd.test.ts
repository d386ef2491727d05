/** realtime-ai-backend.service: the single executable under systemd, stopped gracefully, hardened without breaking the sandbox. */
import { expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers.ts'
import { dockerArgs, dockerStages, numericDefault, readDeploymentFile, timeSpanMs, unitEnvironment, unitSettings } from './files.ts'

const text = readDeploymentFile('realtime-ai-backend.service')
const service = new Map(unitSettings(text).get('Service')!)
const env = unitEnvironment(text)

test('runs the executable the image installs, as a dedicated user, with its environment file', () => {
  const entrypoint = JSON.parse(dockerArgs(dockerStages(readDeploymentFile('Dockerfile')).at(-1)!, 'ENTRYPOINT')[0]!) as string[]
  expect(service.get('ExecStart')).toBe(entrypoint[0]!)
  expect(service.get('User')).toBe('realtime-ai-backend')
  expect(service.get('User')).not.toBe('root')
  expect(service.get('EnvironmentFile')).toStartWith('/etc/')
})

test('DATA_DIR is the state directory systemd creates and hands to the user', () => {
  expect(env.DATA_DIR).toBe(`%S/${service.get('StateDirectory')}`)
  expect(service.get('WorkingDirectory')).toBe(env.DATA_DIR!)
})

test('stops with SIGTERM and waits longer than SHUTDOWN_DRAIN_DELAY_MS plus SHUTDOWN_TIMEOUT_MS before SIGKILL; restarts on failure, not on a bad configuration', () => {
  expect(service.get('KillSignal')).toBe('SIGTERM')
  expect(service.get('KillMode')).toBe('mixed')
  const setting = (name: string) => Number(env[name] ?? numericDefault(name))
  expect(timeSpanMs(service.get('TimeoutStopSec')!)).toBeGreaterThan(setting('SHUTDOWN_DRAIN_DELAY_MS') + setting('SHUTDOWN_TIMEOUT_MS'))
  expect(service.get('Restart')).toBe('on-failure')
  expect(service.get('RestartPreventExitStatus')).toBe('78')
})

test('hardened, without the settings that stop the code sandbox from creating its namespaces', () => {
  for (const setting of ['NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'PrivateTmp', 'PrivateDevices']) expect(service.has(setting)).toBe(true)
  // RestrictNamespaces forbids unshare; the /proc ones make the kernel refuse the sandbox a /proc of its
  // own; PrivateUsers changes the user namespace the sandbox maps its root onto; Bun's JIT writes code.
  const breaking = ['RestrictNamespaces', 'PrivateUsers', 'ProtectKernelTunables', 'ProtectKernelLogs', 'ProcSubset', 'MemoryDenyWriteExecute']
  expect(breaking.filter((setting) => service.has(setting))).toEqual([])
})

const systemdAnalyze = Bun.which('systemd-analyze')
test.skipIf(!systemdAnalyze)('systemd-analyze verify finds nothing to report (ExecStart pointed at an existing program)', () => {
  const dir = tempDir('svc-unit-')
  try {
    const file = join(dir.path, 'realtime-ai-backend.service')
    writeFileSync(file, text.replace(/^ExecStart=.*$/m, `ExecStart=${Bun.which('true')}`))
    const result = Bun.spawnSync([systemdAnalyze!, 'verify', file])
    expect(result.stderr.toString()).toBe('')
    expect(result.exitCode).toBe(0)
    // A misspelt setting is reported, so the check above can fail.
    writeFileSync(file, text.replace('KillMode=mixed', 'KilMode=mixed').replace(/^ExecStart=.*$/m, `ExecStart=${Bun.which('true')}`))
    expect(Bun.spawnSync([systemdAnalyze!, 'verify', file]).stderr.toString()).toContain("Unknown key 'KilMode'")
  } finally {
    dir.remove()
  }
})
if (!systemdAnalyze) console.warn('[skip] systemd-analyze verify on docs/deployment/realtime-ai-backend.service: systemd-analyze is not installed')
