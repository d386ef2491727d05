import { t, type Static } from 'elysia'
import { integer, strictObject } from '../../src/schemas.ts'

export const IMPORT_STATUSES = ['queued', 'cloning', 'analysing', 'indexing', 'succeeded', 'failed'] as const
export type ImportStatus = (typeof IMPORT_STATUSES)[number]
export const ACTIVE_STATUSES: readonly ImportStatus[] = ['queued', 'cloning', 'analysing', 'indexing']

/** Branch and tag names git accepts, minus the odd corners (`..`, leading `-` or `/`, control characters). */
const REF_PATTERN = '^(?!.*\\.\\.)(?!.*//)(?!.*\\.lock$)(?!.*/$)[A-Za-z0-9_][A-Za-z0-9._/+-]*$'

export const importBody = strictObject({
  repository: t.String({
    minLength: 1,
    maxLength: 2048,
    description: 'An https URL of a Git repository, or an owner/name shorthand for the code-hosting provider (IMPORT_CODEHOST_URL)',
    examples: ['octocat/Hello-World', 'https://github.com/octocat/Hello-World.git'],
  }),
  ref: t.Optional(
    t.String({ minLength: 1, maxLength: 255, pattern: REF_PATTERN, description: "Branch or tag to import. Default the repository's HEAD", examples: ['main'] }),
  ),
  depth: t.Optional(integer({ minimum: 1, maximum: 1_000_000, description: 'Commits of history to fetch. Default all; 1 is enough for analysis and search' })),
})
export type ImportBody = Static<typeof importBody>

export const importParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64, description: 'Import id' }) })

const languageShare = t.Object({
  name: t.String(),
  files: integer(),
  bytes: integer(),
  lines: integer(),
  /** Share of the bytes of files with a known language. */
  share: t.Number({ description: 'Fraction (0-1) of the bytes of files whose language is known' }),
})

const dependency = t.Object({ name: t.String(), version: t.Optional(t.String()), dev: t.Boolean() })

const manifest = t.Object({
  path: t.String(),
  kind: t.String({ description: 'package.json, go.mod, Cargo.toml, pyproject.toml, requirements.txt...' }),
  ecosystem: t.String({ description: 'npm, pypi, go, cargo, rubygems, packagist, maven, hex, pub' }),
  name: t.Optional(t.String()),
  dependencies: t.Array(dependency, { description: 'At most 200 per manifest' }),
  truncated: t.Boolean({ description: 'More dependencies were listed than are shown' }),
})

export const repositoryAnalysis = t.Object({
  files: integer({ description: 'Regular files (symlinks counted separately)' }),
  directories: integer(),
  bytes: integer({ description: 'Bytes of regular files' }),
  lines: integer({ description: 'Lines of text files' }),
  binaryFiles: integer(),
  languages: t.Array(languageShare, { description: 'By bytes, largest first' }),
  links: t.Object({
    count: integer(),
    entries: t.Array(t.Object({ path: t.String(), target: t.String() }), { description: 'Symlinks as recorded, never followed; at most 100' }),
  }),
  frameworks: t.Array(t.String()),
  packageManagers: t.Array(t.String()),
  manifests: t.Array(manifest, { description: 'At most 50' }),
  entryPoints: t.Array(t.String()),
  testDirectories: t.Array(t.String()),
  license: t.Union([t.Object({ path: t.Union([t.String(), t.Null()]), spdx: t.Union([t.String(), t.Null()]) }), t.Null()], {
    description: 'Licence file and the SPDX id recognised in it (or declared in a manifest)',
  }),
  readme: t.Union([t.Object({ path: t.String(), title: t.Union([t.String(), t.Null()]), summary: t.String() }), t.Null()]),
  largestFiles: t.Array(t.Object({ path: t.String(), bytes: integer() }), { description: 'The ten largest regular files' }),
})
export type RepositoryAnalysis = Static<typeof repositoryAnalysis>

const failure = t.Object({ code: t.String({ description: 'Stable error code (see the errors page)' }), message: t.String() })

const importSummary = t.Object({
  commit: t.String(),
  previousCommit: t.Union([t.String(), t.Null()], { description: 'Commit the index held before; null for a first import' }),
  incremental: t.Boolean({ description: 'Only the files that changed since previousCommit were re-indexed' }),
  receivedBytes: integer({ description: 'Bytes downloaded from the Git server' }),
  checkout: t.Object({ written: integer(), removed: integer() }),
  index: t.Object({ files: integer(), chunks: integer(), removed: integer() }),
  durationsMs: t.Object({
    clone: t.Number({ description: 'Fetch and checkout together' }),
    fetch: t.Optional(t.Number({ description: 'Downloading the objects and indexing the pack they came in' })),
    packIndex: t.Optional(t.Number({ description: 'Of fetch, indexing the pack' })),
    checkout: t.Optional(t.Number({ description: 'Writing the changed files into the tree' })),
    analysis: t.Number(),
    indexing: t.Number(),
    total: t.Number(),
  }),
  analysis: repositoryAnalysis,
})
export type ImportSummary = Static<typeof importSummary>

export const importProgress = t.Object(
  {
    phase: t.String({
      description: 'queued, a clone phase as the Git server or git names it (Receiving objects...), Checking out files, analysing or indexing',
    }),
    loaded: t.Optional(integer()),
    total: t.Optional(integer()),
    receivedBytes: t.Optional(integer()),
  },
  { additionalProperties: true },
)

export const importView = t.Object({
  id: t.String(),
  status: t.UnionEnum(IMPORT_STATUSES),
  repository: t.Object({ id: t.String(), name: t.String(), url: t.String() }),
  ref: t.Union([t.String(), t.Null()]),
  depth: t.Union([integer(), t.Null()]),
  commit: t.Union([t.String(), t.Null()]),
  progress: t.Union([importProgress, t.Null()]),
  summary: t.Union([importSummary, t.Null()]),
  error: t.Union([failure, t.Null()]),
  statusUrl: t.String(),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
  finishedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})
export type ImportView = Static<typeof importView>

export const importAccepted = t.Object({
  importId: t.String(),
  status: t.UnionEnum(IMPORT_STATUSES),
  statusUrl: t.String({ description: 'GET it for the state, or with Accept: text/event-stream to follow the progress' }),
  repository: t.Object({ id: t.String(), name: t.String(), url: t.String() }),
})

export const progressStreamDescription =
  'Server-sent events, each with an `id` (its sequence number; send it back as `Last-Event-ID` to resume): ' +
  '`import` (the import id, repository and statusUrl), `status` (`{status}` at each transition), ' +
  '`clone` (`{phase, loaded, total, receivedBytes}` from the Git server and the pack indexing, then "Checking out files"), ' +
  '`analysis` (running counts with `partial: true`, then the whole analysis with `partial: false`), ' +
  '`indexing` (`{filesIndexed, chunksIndexed, files, removed}`), and finally `summary` (the import as GET answers it) ' +
  'or `error` (`{code, message}`). The stream ends after `summary` or `error`.'
