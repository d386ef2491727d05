/** completeDocument on its own: a small generated document and route table in, the completed document out. */
import { describe, expect, test } from 'bun:test'
import { t } from 'elysia'
import { completeDocument, wireValue, type RouteEntry } from '../../plugins/docs/openapi-contract.ts'
import { integer, problem } from '../../src/schemas.ts'

const body = t.Object({ name: t.String(), count: integer() })
const json = (value: unknown) => JSON.parse(JSON.stringify(value))

function complete(operation: Record<string, unknown>, route: Omit<RouteEntry, 'path'>) {
  const generated = { openapi: '3.1.2', info: { title: 'x', version: '1' }, paths: { '/things/{id}': { [route.method.toLowerCase()]: operation } } }
  const document = completeDocument(generated, [{ ...route, path: '/things/:id' }])
  return { document, operation: document.paths['/things/{id}'][route.method.toLowerCase()] }
}

describe('completing the generated document', () => {
  test('a body is JSON with the route’s schema, and may be refused with 400, 413, 415 and 422', () => {
    const { operation } = complete(
      { requestBody: { content: {}, required: true }, responses: { 200: { description: 'ok' } } },
      { method: 'POST', hooks: { body } },
    )
    expect(operation.requestBody).toEqual({ required: true, content: { 'application/json': { schema: json(body) } } })
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '413', '414', '415', '422', '431'])
  })

  test('a route that names the urlencoded parser also takes forms; an optional body is not required', () => {
    const { operation } = complete(
      { requestBody: { content: {} }, responses: { 200: { description: 'ok' } } },
      { method: 'POST', hooks: { body: t.Optional(body), parse: [{ fn: 'json' }, { fn: 'urlencoded' }] } },
    )
    expect(Object.keys(operation.requestBody.content)).toEqual(['application/json', 'application/x-www-form-urlencoded'])
    expect(operation.requestBody.required).toBe(false)
  })

  test('the guards add 401, 403 naming the scope and plan, and 429; a public route gets security: []', () => {
    const guarded = complete(
      { security: [{ bearer: ['usage:read'] }], responses: { 200: { description: 'ok' } } },
      { method: 'GET', hooks: { detail: { 'x-required-scope': 'usage:read', 'x-required-plan': 'enterprise', 'x-rate-limit': [] } } },
    ).operation
    expect(guarded.responses['401']).toEqual({ $ref: '#/components/responses/Unauthenticated' })
    expect(guarded.responses['403'].description).toContain(
      '`usage:read` scope (`insufficient_scope`), or the organisation is not on the enterprise plan (`plan_required`)',
    )
    expect(guarded.responses['429']).toEqual({ $ref: '#/components/responses/RateLimited' })
    expect(guarded.security).toEqual([{ bearer: ['usage:read'] }])
    const open = complete({ responses: { 200: { description: 'ok' } } }, { method: 'GET', hooks: {} }).operation
    expect(open.security).toEqual([])
    expect(open.responses['400']).toBeUndefined()
  })

  test('problem bodies become problem+json, void answers lose their content, declared responses are merged', () => {
    const { operation, document } = complete(
      {
        responses: {
          200: { description: 'Response for status 200', content: { 'text/plain': { schema: { type: 'string' } } } },
          204: { description: 'none', content: { type: 'void', description: 'none' } },
          404: { description: problem.description, content: { 'application/json': { schema: json(problem) } } },
        },
      },
      { method: 'GET', hooks: { detail: { responses: { 200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } } } } } },
    )
    expect(operation.responses['200']).toEqual({ description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } })
    expect(operation.responses['204']).toEqual({ description: 'none' })
    expect(operation.responses['404']).toEqual({
      description: 'Not found: a problem body whose `code` says which',
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    })
    expect(document.components.schemas.Problem).toEqual(json(problem))
  })

  test('query and path values Elysia coerces are described as what they carry; 3.0 nullable goes', () => {
    expect(wireValue(json(t.Integer({ minimum: 1 })))).toEqual({ minimum: 1, type: 'integer' })
    expect(wireValue(json(t.Numeric()))).toEqual({ type: 'number' })
    expect(wireValue({ anyOf: [{ type: 'string' }, { type: 'integer' }] })).toEqual({ anyOf: [{ type: 'string' }, { type: 'integer' }] })
    const { operation } = complete(
      {
        responses: {
          200: {
            description: 'ok',
            content: { 'application/json': { schema: { type: 'object', properties: { at: { nullable: true, type: ['string', 'null'] } } } } },
          },
        },
      },
      { method: 'GET', hooks: {} },
    )
    expect(operation.responses['200'].content['application/json'].schema.properties.at).toEqual({ type: ['string', 'null'] })
  })
})
