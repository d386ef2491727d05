import { t, type Static } from 'elysia'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

export const DEFAULT_BRANCH = 'gh-pages'
export const DEFAULT_MESSAGE = 'Publish site'

export const siteFile = strictObject({
  path: t.String({ minLength: 1, maxLength: 1024, description: 'Path inside the site, relative, / separated', examples: ['index.html', 'assets/logo.png'] }),
  content: t.String({ description: 'The file: UTF-8 text, or base64 when encoding is base64' }),
  encoding: t.Optional(oneOf(['utf-8', 'base64'] as const, { description: 'How content is written: utf-8 (default) or base64 for binary files' })),
})

export const siteSource = strictObject(
  {
    importId: t.String({ minLength: 1, maxLength: 100, description: 'A succeeded repository import of your organisation (POST /api/codehost/import)' }),
    directory: t.Optional(
      t.String({
        maxLength: 1024,
        description: 'Directory of the repository that holds the site, such as `dist` or `docs/site`. Default the root',
        examples: ['dist'],
      }),
    ),
  },
  {
    description:
      "The site as files of an imported repository, read at that import's commit (symlinks and submodules are left out). The same limits and checks as inline files apply. Give either files or source",
  },
)

export const publishBody = strictObject({
  repository: t.String({
    minLength: 3,
    maxLength: 140,
    description: 'Target repository as owner/name (GitHub naming rules); created on your own account when missing',
    examples: ['octo-dev/site'],
  }),
  files: t.Optional(
    t.Array(siteFile, {
      minItems: 1,
      description:
        'The whole site, inline; it replaces the branch content entirely. Limits: PUBLISH_MAX_FILES files, PUBLISH_MAX_SITE_BYTES decoded bytes. Give either files or source',
    }),
  ),
  source: t.Optional(siteSource),
  branch: t.Optional(t.String({ minLength: 1, maxLength: 200, description: `Branch Pages serves from. Default ${DEFAULT_BRANCH}` })),
  customDomain: t.Optional(
    t.String({
      minLength: 3,
      maxLength: 253,
      description: 'Host name to serve the site at; written as CNAME and set on the Pages site',
      examples: ['docs.example.com'],
    }),
  ),
  message: t.Optional(t.String({ minLength: 1, maxLength: 2000, description: `Commit message. Default "${DEFAULT_MESSAGE}"` })),
  requireIndex: t.Optional(t.Boolean({ description: 'Refuse a site without a root index.html. Default true' })),
  private: t.Optional(t.Boolean({ description: 'Visibility of a repository created by this publish (ignored for an existing one). Default false' })),
})
export type PublishBody = Static<typeof publishBody>

export const PAGES_OUTCOMES = ['enabled', 'updated', 'unchanged'] as const

export const publishAnswer = t.Object({
  repository: t.String({ description: 'owner/name' }),
  branch: t.String(),
  commit: t.String({ description: 'Commit id now at the tip of the branch' }),
  previousCommit: t.Nullable(t.String({ description: 'The tip before this publish; null for a new branch' })),
  unchanged: t.Boolean({ description: 'The branch already held exactly this site: no commit was made and commit is the existing one' }),
  url: t.String({
    description:
      'Where the site is served, as the Pages API reports it (html_url); https://<owner>.github.io/<name>/ or the custom domain when it reports none',
  }),
  repositoryCreated: t.Boolean(),
  pages: oneOf(PAGES_OUTCOMES, { description: 'enabled (Pages switched on now), updated (branch or custom domain changed), unchanged' }),
  files: integer({ description: 'Files committed, .nojekyll and CNAME included' }),
  bytes: integer({ description: 'Total size of the files committed' }),
})
export type PublishAnswer = Static<typeof publishAnswer>

/** One step done, as streamed in `progress` events. */
export type ProgressEvent =
  | { stage: 'accepted'; repository: string; branch: string; files: number; bytes: number }
  | { stage: 'repository'; repository: string; created: boolean }
  | { stage: 'fetched'; previousCommit: string | null }
  | { stage: 'committed'; commit: string; unchanged: boolean }
  | { stage: 'pushed'; commit: string }
  | { stage: 'pages'; pages: (typeof PAGES_OUTCOMES)[number]; url: string }

export const streamDescription =
  'With Accept: text/event-stream the answer is a stream: `event: progress` events (data {stage, ...}; stages accepted, repository, fetched, committed, ' +
  'pushed (absent when unchanged), pages), then one `event: published` with the JSON answer, or `event: error` with a problem body.'
