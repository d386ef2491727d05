/** Repository import's slice of the configuration: where imports clone from and how much they may take. */
import { defineSettings, integer, list, text, url } from '../../src/config.ts'

export const importsSettings = defineSettings({
  title: 'Repository import',
  variables: {
    IMPORT_CODEHOST_URL: {
      doc: "Code-hosting provider of repository imports: owner/name shorthands clone from it, and only its host receives the user's stored token",
      parse: url('https:', 'http:'),
      fallback: 'https://github.com',
    },
    IMPORT_CODEHOST_PROVIDER: {
      doc: 'Integration provider whose stored token authenticates imports from IMPORT_CODEHOST_URL',
      parse: text,
      fallback: 'github',
    },
    IMPORT_ALLOW_HOSTS: {
      doc: 'Comma-separated host or host:port entries imports may reach on any address (a self-hosted Git server); plain http is allowed only for these',
      parse: list,
      fallback: [] as string[],
    },
    IMPORT_MAX_REPOSITORY_BYTES: {
      doc: 'Largest repository an import accepts, in bytes: the download (ref list and pack) and the checked-out files are each held to it',
      parse: integer(1024, 64 * 1024 ** 3),
      fallback: 512 * 1024 ** 2,
    },
    IMPORT_MAX_FILES: { doc: 'Most files a checked-out repository may have', parse: integer(1, 10_000_000), fallback: 100_000 },
    IMPORT_MAX_FILE_BYTES: { doc: 'Largest single file a repository may hold, in bytes', parse: integer(1, 4 * 1024 ** 3), fallback: 50 * 1024 ** 2 },
    IMPORT_CLONE_TIMEOUT_SECONDS: {
      doc: 'Longest a clone or fetch, with its checkout, may take before the import fails',
      parse: integer(1, 86_400),
      fallback: 300,
    },
    IMPORT_HEARTBEAT_MS: {
      doc: 'How often a running import writes its heartbeat; one silent for three heartbeats (its process died) is marked failed by any process',
      parse: integer(100, 600_000),
      fallback: 5000,
    },
    IMPORT_CONCURRENCY: { doc: 'Imports run at the same time in one process; later ones wait queued', parse: integer(1, 64), fallback: 2 },
  },
  build: (v) => ({
    imports: {
      codehostUrl: v.IMPORT_CODEHOST_URL,
      codehostProvider: v.IMPORT_CODEHOST_PROVIDER,
      allowHosts: v.IMPORT_ALLOW_HOSTS.map((host) => host.toLowerCase()),
      maxRepositoryBytes: v.IMPORT_MAX_REPOSITORY_BYTES,
      maxFiles: v.IMPORT_MAX_FILES,
      maxFileBytes: v.IMPORT_MAX_FILE_BYTES,
      cloneTimeoutMs: v.IMPORT_CLONE_TIMEOUT_SECONDS * 1000,
      concurrency: v.IMPORT_CONCURRENCY,
      heartbeatMs: v.IMPORT_HEARTBEAT_MS,
    },
  }),
})
