/** The environment the deployment files give the service: only variables it knows, values it accepts. */
import { afterAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/main/config.ts'
import { tempDir } from '../helpers.ts'
import { composeFile, dockerEnv, dockerStages, environmentOf, readDeploymentFile, replicas, serviceVariables, unitEnvironment } from './files.ts'

const dataDir = tempDir('svc-deploy-env-')
afterAll(() => dataDir.remove())

const compose = composeFile()
const runtime = dockerStages(readDeploymentFile('Dockerfile')).at(-1)!

const sources: [string, Record<string, string>][] = [
  ['Dockerfile (runtime stage)', dockerEnv(runtime)],
  ...replicas(compose).map(([name, service]): [string, Record<string, string>] => [`compose.yaml ${name}`, environmentOf(service)]),
  ['realtime-ai-backend.service', unitEnvironment(readDeploymentFile('realtime-ai-backend.service'))],
]

describe('every variable the deployment files set is one the service reads', () => {
  for (const [source, env] of sources)
    test(source, () => {
      expect(Object.keys(env).length).toBeGreaterThan(0)
      expect(Object.keys(env).filter((name) => !serviceVariables.has(name))).toEqual([])
    })
})

test('compose.yaml gives two replicas and both get the same environment', () => {
  const found = replicas(compose)
  expect(found.map(([name]) => name)).toEqual(['service-1', 'service-2'])
  expect(environmentOf(found[1]![1])).toEqual(environmentOf(found[0]![1]))
})

test("the service's configuration accepts a replica's environment as compose.yaml gives it", () => {
  const env = environmentOf(replicas(compose)[0]![1])
  // Paths aside: DATA_DIR is the container's volume, created by loadConfig here.
  const config = loadConfig({ ...env, DATA_DIR: dataDir.path })
  expect(config.databaseUrl).toBe(`postgres://service:${'compose-postgres-password'}@postgres:5432/service`)
  expect(config.redisUrl).toBe('redis://redis:6379')
  expect(config.publicBaseUrl).toBe('http://localhost:8080')
  expect(config.host).toBe('0.0.0.0')
  expect(config.port).toBe(3000)
  // The secrets come from the environment, so no replica generates its own into DATA_DIR.
  expect(config.generatedSecrets).toEqual([])
  expect(config.trustedProxies).toEqual([String((compose.services.proxy!.networks as Record<string, { ipv4_address: string }>).backend!.ipv4_address)])
})

test('compose.yaml refuses to start without the secrets an operator must set', () => {
  expect(() => composeFile({})).toThrow(/POSTGRES_PASSWORD|JWT_SECRET|TOKEN_ENCRYPTION_KEY/)
  expect(() => composeFile({ POSTGRES_PASSWORD: 'x', TOKEN_ENCRYPTION_KEY: 'y'.repeat(32) })).toThrow(/JWT_SECRET/)
})

test("the service's configuration accepts the Dockerfile's and the systemd unit's environment", () => {
  for (const [, env] of [sources[0]!, sources.at(-1)!]) {
    const config = loadConfig({ ...env, DATA_DIR: dataDir.path })
    expect(config.port).toBe(3000)
  }
})
