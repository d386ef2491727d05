import { EventSourceParserStream } from 'eventsource-parser/stream'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createApp } from '../../src/main/app.ts'
import { createImportService, type ImportService, type ImportServiceOptions, type TokenSource } from '../../plugins/imports/import-service.ts'
import type { ImportView } from '../../plugins/imports/schemas.ts'
import { workspaceFor } from '../../plugins/imports/workspace.ts'
import type { CodeIndex, IndexFilesInput, RepositoryFile } from '../../plugins/code-search/index.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { bearer, makeApp, userWithRole, type TestApp } from '../helpers.ts'

export interface IndexCall {
  orgId: string
  repositoryId: string
  repositoryName: string
  files: RepositoryFile[]
  removedPaths: string[]
}

/** A CodeIndex that keeps what it was handed, to see exactly which files an import re-indexes. */
export function recordingIndex(): CodeIndex & { calls: IndexCall[]; removals: { orgId: string; repositoryId: string }[]; commits: Map<string, string> } {
  const calls: IndexCall[] = []
  const removals: { orgId: string; repositoryId: string }[] = []
  // orgId/repositoryId -> the commit last indexed, as the real index records it.
  const commits = new Map<string, string>()
  return {
    calls,
    removals,
    commits,
    async indexedCommit(orgId, repositoryId) {
      return commits.get(`${orgId}/${repositoryId}`)
    },
    async indexFiles(input: IndexFilesInput) {
      const files: RepositoryFile[] = []
      for await (const file of input.files) {
        files.push(file)
        input.onProgress?.({ filesIndexed: files.length, chunksIndexed: files.length })
      }
      calls.push({
        orgId: input.orgId,
        repositoryId: input.repositoryId,
        repositoryName: input.repositoryName,
        files,
        removedPaths: [...(input.removedPaths ?? [])],
      })
      if (input.commit) commits.set(`${input.orgId}/${input.repositoryId}`, input.commit)
      return { files: files.length, chunks: files.length }
    },
    async removeRepository(orgId, repositoryId) {
      removals.push({ orgId, repositoryId })
      commits.delete(`${orgId}/${repositoryId}`)
    },
    async search() {
      return []
    },
    async close() {},
  }
}

export interface SseMessage {
  id: number
  event: string
  data: any
}

/** Every event of an SSE response until the server ends it. */
export async function readEvents(response: Response): Promise<SseMessage[]> {
  const events: SseMessage[] = []
  const stream = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
  for await (const message of stream) events.push({ id: Number(message.id), event: message.event ?? 'message', data: JSON.parse(message.data) })
  return events
}

export interface ImportHarness {
  t: TestApp
  git: GitServer
  index: ReturnType<typeof recordingIndex>
  imports: ImportService
  /** The settings the import service runs with; each import reads them when it starts (a test may change them between imports). */
  settings: ImportServiceOptions['settings']
  /** Base URL of the service listening on 127.0.0.1. */
  url: string
  member: { token: string; user: { id: string; orgId: string } }
  post(body: unknown, options?: { token?: string; accept?: string }): Promise<Response>
  get(id: string, options?: { token?: string; accept?: string; lastEventId?: number }): Promise<Response>
  /** Starts an import as JSON, waits for it to end, and answers it as GET does. */
  importAndWait(body: unknown, token?: string): Promise<ImportView>
  workspaceOf(view: ImportView, orgId?: string): { root: string; exists: boolean }
  close(): Promise<void>
}

export interface HarnessOptions {
  env?: Record<string, string>
  settings?: Partial<ImportServiceOptions['settings']>
  tokens?: TokenSource
  lookup?: ImportServiceOptions['lookup']
  /** Allowlist the git server (default true). */
  allowGitServer?: boolean
}

/**
 * The whole service on 127.0.0.1 with a real git server beside it, its import service built here with a
 * recording index (and any settings or token source a suite needs).
 */
export async function startImportHarness(options: HarnessOptions = {}): Promise<ImportHarness> {
  const git = startGitServer()
  const allow: Record<string, string> = options.allowGitServer === false ? {} : { IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` }
  const t = await makeApp({ IMPORT_CODEHOST_URL: git.url, ...allow, ...options.env })
  const index = recordingIndex()
  const settings = { ...t.config.imports, ...options.settings }
  const imports = createImportService({
    db: t.deps.db,
    codeIndex: index,
    dataDir: t.config.dataDir,
    settings,
    tokens: options.tokens,
    logger: t.deps.logger,
    lookup: options.lookup,
  })
  const app = createApp({ ...t.deps, imports })
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: (request) => app.handle(request) })
  const url = `http://127.0.0.1:${server.port}`
  const member = await userWithRole(t, 'member')

  const post = (body: unknown, { token = member.token, accept = 'application/json' } = {}) =>
    fetch(`${url}/api/codehost/import`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json', accept },
      body: JSON.stringify(body),
    })
  const get = (
    id: string,
    { token = member.token, accept = 'application/json', lastEventId }: { token?: string; accept?: string; lastEventId?: number } = {},
  ) =>
    fetch(`${url}/api/codehost/imports/${id}`, {
      headers: { ...bearer(token), accept, ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }) },
    })

  return {
    t,
    git,
    index,
    imports,
    settings,
    url,
    member,
    post,
    get,
    async importAndWait(body, token = member.token) {
      const response = await post(body, { token })
      if (response.status !== 202) throw new Error(`import answered ${response.status}: ${await response.text()}`)
      const { importId } = (await response.json()) as { importId: string }
      await imports.settled(importId)
      return (await (await get(importId, { token })).json()) as ImportView
    },
    workspaceOf(view, orgId = member.user.orgId) {
      const { root } = workspaceFor(t.config.dataDir, orgId, view.repository.id)
      return { root, exists: existsSync(join(root)) }
    },
    async close() {
      await imports.close()
      await server.stop(true)
      await t.close()
      await git.close()
    },
  }
}
