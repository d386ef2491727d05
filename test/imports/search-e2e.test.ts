import { afterAll, describe, expect, test } from 'bun:test'
import type { ImportView } from '../../plugins/imports/schemas.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { bearer, makeApp, userWithRole } from '../helpers.ts'

// The service exactly as it is wired: imports feed the real code index, which POST /api/search reads.
const git = startGitServer()
const t = await makeApp({ IMPORT_CODEHOST_URL: git.url, IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` })
const member = await userWithRole(t, 'member')
afterAll(async () => {
  await t.close()
  await git.close()
})

async function importRepository(repository: string, token = member.token): Promise<ImportView> {
  const response = await t.send('POST', '/api/codehost/import', { repository }, bearer(token))
  expect(response.status).toBe(202)
  const { importId } = await response.json()
  await t.deps.imports.settled(importId)
  return (await (await t.request(`/api/codehost/imports/${importId}`, { headers: bearer(token) })).json()) as ImportView
}

async function search(query: string, token = member.token): Promise<{ path: string; repositoryName: string; snippet: string }[]> {
  const response = await t.send('POST', '/api/search', { query, mode: 'text' }, bearer(token))
  expect(response.status).toBe(200)
  return (await response.json()).results
}

/** The snippets' code without the match marks. */
const codeOf = (results: { snippet: string }[]) => results.map((r) => r.snippet.replace(/<\/?mark>/g, '')).join('\n')

describe('import, then search', () => {
  test('imported files are searchable, and a re-import replaces changed files and drops deleted ones', async () => {
    const repository = git.createRepository('acme/shop', {
      'billing/invoice.ts':
        'export function calculateInvoiceTotal(lines: { price: number; quantity: number }[]) {\n  return lines.reduce((sum, l) => sum + l.price * l.quantity, 0)\n}\n',
      'auth/session.py': 'def refresh_session_token(session):\n    """Rotate the refresh token of a session."""\n    return session.rotate()\n',
      'shipping/rates.go':
        'package shipping\n\n// ParcelRate prices a parcel by its weight.\nfunc ParcelRate(weightGrams int) int {\n\treturn weightGrams / 10\n}\n',
    })
    const first = await importRepository('acme/shop')
    expect(first.status).toBe('succeeded')
    expect(first.summary!.index.chunks).toBeGreaterThan(0)

    expect((await search('calculate invoice total'))[0]).toMatchObject({ path: 'billing/invoice.ts', repositoryName: 'acme/shop' })
    expect((await search('refresh session token'))[0]!.path).toBe('auth/session.py')
    expect(codeOf(await search('parcel weight grams'))).toContain('ParcelRate(weightGrams int)')

    repository.commit({
      'auth/session.py': null,
      'shipping/rates.go':
        'package shipping\n\n// FreightSurcharge adds the fuel surcharge.\nfunc FreightSurcharge(base int) int {\n\treturn base * 11 / 10\n}\n',
    })
    const second = await importRepository('acme/shop')
    expect(second.summary).toMatchObject({ incremental: true, index: { files: 1, removed: 1 } })
    expect((await search('refresh session token')).map((r) => r.path)).not.toContain('auth/session.py')
    expect((await search('freight surcharge'))[0]!.path).toBe('shipping/rates.go')
    // The old version of the changed file is gone: no chunk still holds its code.
    expect(codeOf(await search('parcel weight grams'))).not.toContain('weightGrams')

    // Another organisation sees none of it.
    const outsider = await userWithRole(t, 'member')
    expect(await search('calculate invoice total', outsider.token)).toEqual([])
  })
})
