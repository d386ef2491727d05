import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { bearer, userWithRole } from '../helpers.ts'
import { readEvents, startImportHarness } from './helpers.ts'

const h = await startImportHarness()
afterAll(() => h.close())

const files = {
  'README.md':
    '# Widgets\n\n[![build](https://ci.example/badge.svg)](https://ci.example)\n\nWidgets renders **fast** charts for [dashboards](https://example.com).\n\n## Install\n\nbun add widgets\n',
  LICENSE: 'Apache License\nVersion 2.0, January 2004\nhttp://www.apache.org/licenses/\n',
  'package.json': JSON.stringify({
    name: 'widgets',
    main: 'src/index.ts',
    dependencies: { react: '^19.0.0', hono: '^4.6.0' },
    devDependencies: { vitest: '^2.1.0' },
  }),
  'bun.lock': '{"lockfileVersion": 1}\n',
  'src/index.ts': 'export function renderChart(points: number[]): string {\n  return points.join(",")\n}\n',
  'src/chart.tsx': 'export const Chart = () => <svg />\n',
  'server/main.go': 'package main\n\nfunc main() {}\n',
  'go.mod': 'module example.com/widgets\n\ngo 1.22\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.10.0\n\tgolang.org/x/text v0.14.0 // indirect\n)\n',
  'tools/build.py': 'import sys\n\n\ndef build():\n    return sys.argv\n',
  'pyproject.toml': '[project]\nname = "widgets-tools"\ndependencies = ["fastapi>=0.110", "pydantic[email]==2.7.0"]\n\n[tool.uv]\n',
  'test/chart.test.ts': 'import { expect } from "vitest"\n',
  'assets/logo.png': new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2, 3]),
  'scripts/deploy.sh': { executable: '#!/bin/sh\necho deploy\n' },
}
const widgets = h.git.createRepository('acme/widgets', files)
const sizeOf = (content: (typeof files)[keyof typeof files]) =>
  typeof content === 'string' ? Buffer.byteLength(content) : content instanceof Uint8Array ? content.byteLength : Buffer.byteLength(content.executable)

describe('POST /api/codehost/import', () => {
  test('imports a multi-language repository and answers its analysis', async () => {
    const response = await h.post({ repository: 'acme/widgets' })
    expect(response.status).toBe(202)
    const accepted = await response.json()
    expect(accepted).toMatchObject({ status: 'queued', repository: { name: 'acme/widgets', url: h.git.urlOf('acme/widgets') } })
    expect(accepted.statusUrl).toBe(`/api/codehost/imports/${accepted.importId}`)
    expect(response.headers.get('location')).toBe(accepted.statusUrl)

    await h.imports.settled(accepted.importId)
    const view = await (await h.get(accepted.importId)).json()
    expect(view.status).toBe('succeeded')
    expect(view.error).toBeNull()
    expect(view.commit).toBe(widgets.head())
    const { analysis } = view.summary
    expect(analysis.files).toBe(Object.keys(files).length)
    expect(analysis.directories).toBe(6)
    expect(analysis.binaryFiles).toBe(1)
    expect(analysis.languages.map((l: { name: string }) => l.name).sort()).toEqual(['Go', 'JSON', 'Markdown', 'Python', 'Shell', 'TOML', 'TypeScript'])
    const typescript = analysis.languages.find((l: { name: string }) => l.name === 'TypeScript')
    expect(typescript).toMatchObject({ files: 3, lines: 5 })
    expect(analysis.frameworks).toEqual(['FastAPI', 'Gin', 'Hono', 'React', 'Vitest'])
    expect(analysis.packageManagers).toEqual(['bun', 'go modules', 'uv'])
    const npm = analysis.manifests.find((m: { kind: string }) => m.kind === 'package.json')
    expect(npm.dependencies).toEqual([
      { name: 'react', version: '^19.0.0', dev: false },
      { name: 'hono', version: '^4.6.0', dev: false },
      { name: 'vitest', version: '^2.1.0', dev: true },
    ])
    const go = analysis.manifests.find((m: { kind: string }) => m.kind === 'go.mod')
    expect(go).toMatchObject({ name: 'example.com/widgets', dependencies: [{ name: 'github.com/gin-gonic/gin', version: 'v1.10.0', dev: false }] })
    const python = analysis.manifests.find((m: { kind: string }) => m.kind === 'pyproject.toml')
    expect(python.dependencies.map((d: { name: string }) => d.name)).toEqual(['fastapi', 'pydantic'])
    expect(analysis.entryPoints).toEqual(['src/index.ts'])
    expect(analysis.testDirectories).toEqual(['test'])
    expect(analysis.license).toEqual({ path: 'LICENSE', spdx: 'Apache-2.0' })
    expect(analysis.readme).toEqual({ path: 'README.md', title: 'Widgets', summary: 'Widgets renders fast charts for dashboards.' })
    const bySize = Object.entries(files).map(([path, content]) => ({ path, bytes: sizeOf(content) }))
    bySize.sort((a, b) => b.bytes - a.bytes || (a.path < b.path ? -1 : 1))
    expect(analysis.largestFiles).toEqual(bySize.slice(0, 10))
    expect(analysis.bytes).toBe(bySize.reduce((sum, f) => sum + f.bytes, 0))

    // Text files went to the index, binaries and lock files did not; nothing was removed on a first import.
    const [call] = h.index.calls.filter((c) => c.repositoryId === view.repository.id)
    expect(call!.orgId).toBe(h.member.user.orgId)
    expect(call!.repositoryName).toBe('acme/widgets')
    expect(call!.files.map((f) => f.path)).not.toContain('assets/logo.png')
    expect(call!.files.map((f) => f.path)).not.toContain('bun.lock')
    expect(call!.files.find((f) => f.path === 'src/index.ts')).toEqual({ path: 'src/index.ts', content: files['src/index.ts'], language: 'TypeScript' })
    expect(call!.removedPaths).toEqual([])
    expect(view.summary).toMatchObject({ incremental: false, previousCommit: null, index: { files: call!.files.length, removed: 0 } })

    // Nothing checked out is executable, whatever the tree said.
    const { root } = h.workspaceOf(view)
    expect(statSync(join(root, 'tree', 'scripts', 'deploy.sh')).mode & 0o111).toBe(0)

    // The pack was indexed by the service, and git itself accepts the index and every object in the pack.
    const packs = readdirSync(join(root, 'git', 'objects', 'pack')).filter((name) => name.endsWith('.idx'))
    expect(packs).toHaveLength(1)
    const verified = Bun.spawnSync(['git', 'verify-pack', join(root, 'git', 'objects', 'pack', packs[0]!)])
    expect(verified.stderr.toString()).toBe('')
    expect(verified.exitCode).toBe(0)
  })

  test('streams clone, analysis, indexing and summary events in order, each with an id', async () => {
    const many: Record<string, string> = { 'README.md': '# Many\n\nLots of small files.\n' }
    for (let i = 0; i < 600; i++) many[`pkg/m${i % 12}/file${i}.ts`] = `export const value${i} = ${i}\n`
    h.git.createRepository('acme/many', many)
    const response = await h.post({ repository: 'acme/many' }, { accept: 'text/event-stream' })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events = await readEvents(response)

    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1))
    expect(events[0]!.event).toBe('import')
    const importId = events[0]!.data.importId
    expect(response.headers.get('x-import-id')).toBe(importId)
    expect(events.filter((e) => e.event === 'status').map((e) => e.data.status)).toEqual(['cloning', 'analysing', 'indexing'])
    const kinds = events.map((e) => (e.event === 'status' ? `status:${e.data.status}` : e.event))
    const order = (kind: string) => kinds.indexOf(kind)
    expect(order('status:cloning')).toBeLessThan(kinds.indexOf('clone'))
    expect(kinds.lastIndexOf('clone')).toBeLessThan(order('status:analysing'))
    expect(order('status:analysing')).toBeLessThan(order('analysis'))
    expect(kinds.lastIndexOf('analysis')).toBeLessThan(order('status:indexing'))
    expect(kinds.at(-1)).toBe('summary')

    // Clone phases carry the pack's object counts, the checkout its file counts.
    const phases = [...new Set(events.filter((e) => e.event === 'clone').map((e) => e.data.phase))]
    expect(phases.indexOf('Receiving objects')).toBeLessThan(phases.indexOf('Resolving deltas'))
    expect(phases.at(-1)).toBe('Checking out files')
    const received = events.find((e) => e.event === 'clone' && e.data.phase === 'Receiving objects' && e.data.loaded === e.data.total)!
    expect(received.data.total).toBeGreaterThan(600)
    const checkedOut = events.filter((e) => e.event === 'clone' && e.data.phase === 'Checking out files').at(-1)!
    expect(checkedOut.data).toMatchObject({ loaded: 601, total: 601 })

    // Analysis is streamed: running counts first, then the whole analysis.
    const analysis = events.filter((e) => e.event === 'analysis')
    expect(analysis[0]!.data.partial).toBe(true)
    expect(analysis.at(-1)!.data).toMatchObject({ partial: false, files: 601, directories: 13 })
    expect(events.at(-1)!.data).toMatchObject({ id: importId, status: 'succeeded', summary: { index: { files: 601 } } })

    // A client that lost the stream resumes after the last id it saw.
    const resumed = await readEvents(await h.get(importId, { accept: 'text/event-stream', lastEventId: 3 }))
    expect(resumed.map((e) => e.id)).toEqual(events.slice(3).map((e) => e.id))
    expect(resumed.at(-1)!.event).toBe('summary')
  })

  test('a second import of a repository that is still running is 409 naming the running one', async () => {
    h.git.createRepository('acme/slow', { 'a.txt': 'a\n' })
    h.git.behaviour = { kind: 'trickle', chunkBytes: 64, delayMs: 20 }
    try {
      const first = await (await h.post({ repository: 'acme/slow' })).json()
      const second = await h.post({ repository: `${h.git.url}/acme/slow` })
      expect(second.status).toBe(409)
      expect(await second.json()).toMatchObject({ code: 'import_in_progress', importId: first.importId })
      // While it runs, GET shows its state and live progress.
      const during = await (await h.get(first.importId)).json()
      expect(['queued', 'cloning']).toContain(during.status)
      expect(during.progress.phase).toBeString()
      expect(during.summary).toBeNull()
      h.git.behaviour = { kind: 'normal' }
      await h.imports.settled(first.importId)
    } finally {
      h.git.behaviour = { kind: 'normal' }
    }
  })

  test('a failure ends the stream with an error event, and is kept with the import', async () => {
    const events = await readEvents(await h.post({ repository: 'acme/does-not-exist' }, { accept: 'text/event-stream' }))
    expect(events.map((e) => e.event)).toEqual(['import', 'status', 'error'])
    expect(events.at(-1)!.data).toMatchObject({ code: 'repository_not_found' })
    const view = await (await h.get(events[0]!.data.importId)).json()
    expect(view).toMatchObject({ status: 'failed', error: { code: 'repository_not_found' }, summary: null, progress: null })
    expect(view.finishedAt).toBeString()
  })

  test('validates the body and the scope', async () => {
    const unknownField = await h.post({ repository: 'acme/widgets', branch: 'main' })
    expect(unknownField.status).toBe(422)
    expect((await unknownField.json()).code).toBe('validation_failed')
    const badRef = await h.post({ repository: 'acme/widgets', ref: '../../etc' })
    expect(badRef.status).toBe(422)
    const badDepth = await h.post({ repository: 'acme/widgets', depth: 0 })
    expect(badDepth.status).toBe(422)
    const notARepository = await h.post({ repository: 'just-a-name' })
    expect(notARepository.status).toBe(400)
    expect(await notARepository.json()).toMatchObject({ code: 'repository_url_refused', errors: [{ field: 'repository' }] })

    const viewer = await userWithRole(h.t, 'viewer', { orgId: h.member.user.orgId })
    const refused = await h.post({ repository: 'acme/widgets' }, { token: viewer.token })
    expect(refused.status).toBe(403)
    expect((await refused.json()).code).toBe('insufficient_scope')
    const unauthenticated = await fetch(`${h.url}/api/codehost/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"repository":"acme/widgets"}',
    })
    expect(unauthenticated.status).toBe(401)
  })
})

describe('GET /api/codehost/imports/:id', () => {
  test("is scoped to the organisation: another organisation's import is 404, as JSON and as a stream", async () => {
    h.git.createRepository('acme/private-to-org', { 'main.py': 'print(1)\n' })
    const view = await h.importAndWait({ repository: 'acme/private-to-org' })
    expect(view.status).toBe('succeeded')

    const outsider = await userWithRole(h.t, 'member', { orgId: undefined })
    expect(outsider.user.orgId).not.toBe(h.member.user.orgId)
    const asJson = await h.get(view.id, { token: outsider.token })
    expect(asJson.status).toBe(404)
    expect((await asJson.json()).code).toBe('not_found')
    expect((await h.get(view.id, { token: outsider.token, accept: 'text/event-stream' })).status).toBe(404)
    expect((await h.get('no-such-import')).status).toBe(404)

    // The other organisation importing the same repository gets its own repository record, workspace and index entries.
    const theirs = await h.importAndWait({ repository: 'acme/private-to-org' }, outsider.token)
    expect(theirs.status).toBe('succeeded')
    expect(theirs.repository.id).not.toBe(view.repository.id)
    expect(h.index.calls.find((c) => c.repositoryId === theirs.repository.id)!.orgId).toBe(outsider.user.orgId)
    expect(h.workspaceOf(theirs, outsider.user.orgId).exists).toBe(true)
    expect(readdirSync(join(h.t.config.dataDir, 'imports')).sort()).toEqual([h.member.user.orgId, outsider.user.orgId].sort())
  })

  test('a viewer of the organisation may read an import', async () => {
    h.git.createRepository('acme/readable', { 'x.rb': 'puts 1\n' })
    const view = await h.importAndWait({ repository: 'acme/readable' })
    const viewer = await userWithRole(h.t, 'viewer', { orgId: h.member.user.orgId })
    const response = await fetch(`${h.url}/api/codehost/imports/${view.id}`, { headers: bearer(viewer.token) })
    expect(response.status).toBe(200)
    expect((await response.json()).status).toBe('succeeded')
    expect(existsSync(h.workspaceOf(view).root)).toBe(true)
  })
})
