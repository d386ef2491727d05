/**
 * A client generated from the served document with openapi-typescript compiles against every operation with
 * openapi-fetch, and its types are the service's: integers are numbers, request bodies are checked.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import openapiTS, { type OpenAPI3 } from 'openapi-typescript'
import { operationsOf, scratchDir, served, typecheck } from './support.ts'

const { t, openapi } = await served()
const scratch = scratchDir('openapi-client-')
afterAll(async () => {
  scratch.remove()
  await t.close()
})

const generated = await openapiTS(structuredClone(openapi) as OpenAPI3)

/** One typed call per operation: the path and method must exist and the init must fit, or tsc fails. */
function callsOfEveryOperation(): string {
  const calls = operationsOf(openapi).map(({ path, method }) => {
    const name = JSON.stringify(`${method.toUpperCase()} ${path}`)
    return `  ${name}: (init: Init<${JSON.stringify(path)}, ${JSON.stringify(method)}>) => client.${method.toUpperCase()}(${JSON.stringify(path)}, init),`
  })
  return [
    "import createClient, { type MaybeOptionalInit } from 'openapi-fetch'",
    "import type { paths } from './api.ts'",
    '',
    "const client = createClient<paths>({ baseUrl: 'http://localhost:3000' })",
    "type Method = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace'",
    '// What a call takes for the operation: its params, body and headers (openapi-fetch adds an index signature).',
    'type Init<P extends keyof paths, M extends keyof paths[P]> = MaybeOptionalInit<paths[P], M & Method> & { [key: string]: unknown }',
    '',
    'export const calls = {',
    ...calls,
    '}',
    '',
  ].join('\n')
}

const typedUse = `import createClient from 'openapi-fetch'
import type { paths } from './api.ts'

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Json<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer Body } } }
}
  ? Body
  : never

const client = createClient<paths>({ baseUrl: 'http://localhost:3000' })

export const expiresInIsANumber: Equal<Json<'/auth/login', 'post', 200>['expiresIn'], number> = true
export const createdAtIsANumber: Equal<Json<'/api/chats', 'get', 200>['chats'][number]['createdAt'], number> = true
export const problemStatusIsANumber: Equal<paths['/api/chat']['post']['responses'][401]['content']['application/problem+json']['status'], number> = true

export async function signIn(email: string, password: string): Promise<number | undefined> {
  const { data, error } = await client.POST('/auth/login', { body: { email, password } })
  if (error) return undefined
  return data.expiresIn * 1000
}

export async function searchTheWeb(token: string) {
  await client.POST('/api/web-search', { body: { query: 'bun sql', count: 5 }, headers: { authorization: \`Bearer \${token}\` } })
  // @ts-expect-error a numeric string is not an integer
  await client.POST('/api/web-search', { body: { query: 'bun sql', count: '5' } })
  // @ts-expect-error the query is required
  await client.POST('/api/web-search', { body: { count: 5 } })
}

export async function auditPage(token: string) {
  return client.GET('/api/audit-logs', { params: { query: { limit: 50 } }, headers: { authorization: \`Bearer \${token}\` } })
}
`

describe('a client generated with openapi-typescript', () => {
  test('types integers as numbers: no field is string | number', () => {
    expect(generated).toContain('expiresIn: number;')
    expect(generated).not.toMatch(/string \| number|number \| string/)
  })

  test('compiles a call to every operation, and the typed uses, with tsc', async () => {
    scratch.write('api.ts', generated)
    scratch.write('calls.ts', callsOfEveryOperation())
    scratch.write('use.ts', typedUse)
    const run = await typecheck(scratch.path, ['calls.ts', 'use.ts'])
    expect(run.output.trim()).toBe('')
    expect(run.exitCode).toBe(0)
    expect(callsOfEveryOperation().match(/=> client\./g)!.length).toBe(operationsOf(openapi).length)
  }, 120_000)

  test('tsc fails a call to an operation the document does not have', async () => {
    scratch.write(
      'missing.ts',
      "import createClient from 'openapi-fetch'\nimport type { paths } from './api.ts'\nexport const call = () => createClient<paths>().GET('/api/nowhere', {})\n",
    )
    const run = await typecheck(scratch.path, ['missing.ts'])
    expect(run.exitCode).not.toBe(0)
    expect(run.output).toContain('/api/nowhere')
  })
})
