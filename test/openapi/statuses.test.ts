/**
 * Every status the service answers is one the document declares for that operation: each operation is asked
 * without a token, with a token that lacks its scope, with an empty, a malformed, a non-JSON and an oversized
 * body, with a path value no route takes, and with an oversized head; what comes back must be in its responses.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { MAX_HEADER_BYTES, MAX_URL_BYTES } from '../../src/request-pipeline.ts'
import { BASE, UNLIMITED_BUDGETS, userWithRole } from '../helpers.ts'
import { operationsOf, served, type Operation } from './support.ts'

const { t, openapi } = await served(UNLIMITED_BUDGETS)
afterAll(() => t.close())

const enterprise = await t.deps.accounts.createOrganization('Enterprise Co', 'enterprise')
const owner = (await userWithRole(t, 'owner', { orgId: enterprise.id })).token
const viewer = (await userWithRole(t, 'viewer')).token

interface Probe {
  name: string
  token?: string
  pathValue?: string
  body?: string
  contentType?: string
  headers?: Record<string, string>
  query?: string
}

const probes: Probe[] = [
  { name: 'no token' },
  { name: 'a token without the scope', token: viewer, body: '{}' },
  { name: 'an empty object', token: owner, body: '{}' },
  { name: 'malformed JSON', token: owner, body: '{"a":', contentType: 'application/json' },
  { name: 'a text body', token: owner, body: 'hello', contentType: 'text/plain' },
  { name: 'an oversized body', token: owner, body: `{"a":"${'x'.repeat(2 * 1024 * 1024)}"}` },
  { name: 'a path value no route takes', token: owner, pathValue: `..%2F${'x'.repeat(300)}`, body: '{}' },
  { name: 'an oversized header', token: owner, headers: { 'x-padding': 'x'.repeat(MAX_HEADER_BYTES) } },
  { name: 'an oversized target', token: owner, query: `q=${'x'.repeat(MAX_URL_BYTES)}` },
]

async function ask({ path, method }: Operation, probe: Probe): Promise<number> {
  const target = path.replace(/\{[^}]+\}/g, probe.pathValue ?? 'x1')
  const withBody = method !== 'get' && method !== 'head' && probe.body !== undefined
  const headers: Record<string, string> = {
    host: 'localhost',
    accept: 'application/json, text/event-stream',
    ...(probe.token ? { authorization: `Bearer ${probe.token}` } : {}),
    ...(withBody ? { 'content-type': probe.contentType ?? 'application/json' } : {}),
    ...probe.headers,
  }
  const url = `${BASE}${target}${probe.query ? `?${probe.query}` : ''}`
  const controller = new AbortController()
  const res = await t.app.handle(
    new Request(url, { method: method.toUpperCase(), headers, body: withBody ? probe.body : undefined, signal: controller.signal }),
  )
  // Streams are not read to their end: the status is all that is asked.
  controller.abort()
  await res.body?.cancel().catch(() => {})
  return res.status
}

describe('the statuses the service answers', () => {
  test('are declared in the document for every operation and every probe', async () => {
    const undeclared: string[] = []
    let asked = 0
    for (const operation of operationsOf(openapi)) {
      const declared = Object.keys(operation.operation.responses)
      for (const probe of probes) {
        const status = await ask(operation, probe)
        asked++
        if (!declared.includes(String(status))) undeclared.push(`${operation.method.toUpperCase()} ${operation.path} with ${probe.name}: ${status}`)
      }
    }
    expect(undeclared).toEqual([])
    expect(asked).toBeGreaterThan(300)
  }, 120_000)
})
