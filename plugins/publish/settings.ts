/** Publishing's slice of the configuration: where sites are pushed and how large they may be. */
import { defineSettings, integer, url } from '../../src/config.ts'

export const publishSettings = defineSettings({
  title: 'Publishing to pages',
  variables: {
    CODEHOST_GIT_URL: {
      doc: 'Base of the git remotes sites are pushed to, as <base>/<owner>/<name>.git',
      parse: url('http:', 'https:'),
      fallback: 'https://github.com',
    },
    PUBLISH_MAX_FILES: { doc: 'Most files a published site may have', parse: integer(1, 100_000), fallback: 1000 },
    PUBLISH_MAX_SITE_BYTES: {
      doc: 'Largest published site, decoded bytes of all its files (the request must also fit BODY_LIMIT_BYTES)',
      parse: integer(1, 1024 * 1024 * 1024),
      fallback: 10 * 1024 * 1024,
    },
    PUBLISH_GIT_TIMEOUT_MS: { doc: 'Longest wait for each git HTTP request of a publish (fetch, push)', parse: integer(1000, 600_000), fallback: 60_000 },
  },
  build: (v) => ({
    publish: {
      /** Git remotes are `<gitUrl>/<owner>/<name>.git`; the Pages API is integrations.github.apiUrl. */
      gitUrl: v.CODEHOST_GIT_URL,
      maxFiles: v.PUBLISH_MAX_FILES,
      maxSiteBytes: v.PUBLISH_MAX_SITE_BYTES,
      gitTimeoutMs: v.PUBLISH_GIT_TIMEOUT_MS,
    },
  }),
})
