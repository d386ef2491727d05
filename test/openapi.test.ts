import { afterAll, describe, expect, test } from 'bun:test'
import { OPENAPI_JSON_PATH } from '../plugins/docs/index.ts'
import { makeApp } from './helpers.ts'

describe('OpenAPI document', async () => {
  const t = await makeApp()
  afterAll(() => t.close())
  const doc = await (await t.request(OPENAPI_JSON_PATH)).json()

  test('is served with the service title and bearer scheme', () => {
    expect(doc.openapi).toStartWith('3.')
    expect(doc.info.title).toContain('AI development platform')
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  test('lists every HTTP route of the app with a response schema', () => {
    // Routes that opt out with detail.hide (the documentation site) are left out on purpose.
    const hidden = (r: (typeof t.app.routes)[number]) => (r.hooks as { detail?: { hide?: boolean } } | undefined)?.detail?.hide === true
    const documented = t.app.routes.filter((r) => !r.path.startsWith('/swagger') && r.method !== 'WS' && !hidden(r))
    expect(documented.length).toBeGreaterThan(0)
    for (const route of documented) {
      const path = route.path.replace(/:(\w+)/g, '{$1}')
      const operation = doc.paths[path]?.[route.method.toLowerCase()]
      expect(operation, `${route.method} ${route.path}`).toBeDefined()
      expect(Object.keys(operation.responses).length, `${route.method} ${route.path} responses`).toBeGreaterThan(0)
      const ok = operation.responses['200'] ?? operation.responses['201'] ?? operation.responses['202'] ?? operation.responses['204'] ?? operation.responses['303']
      expect(ok, `${route.method} ${route.path} success response`).toBeDefined()
    }
  })

  test('the explorer page is served', async () => {
    const res = await t.request('/swagger')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/html')
  })
})
