/** The slice of the configuration for uploaded files: how large one may be, how much an organisation keeps, how much a model reads. */
import { defineSettings, integer, type SettingsOf } from '../../src/config.ts'

export const filesSettings = defineSettings({
  title: 'Files',
  variables: {
    FILES_MAX_BYTES: {
      doc: 'Largest uploaded file, in bytes; a larger upload is refused (413 file_too_large) without being read further',
      parse: integer(1024, 512 * 1024 ** 2),
      fallback: 10 * 1024 ** 2,
    },
    FILES_ORG_QUOTA_BYTES: {
      doc: "Total bytes of an organisation's stored files; an upload past it is refused (409 quota_exceeded)",
      parse: integer(1024, 1024 ** 4),
      fallback: 1024 ** 3,
    },
    FILES_TEXT_MAX_CHARS: {
      doc: "Most characters of one text file or PDF's extracted text a chat model reads; the rest is cut with a marker",
      parse: integer(1000, 2_000_000),
      fallback: 100_000,
    },
  },
  build: (v) => ({
    files: {
      maxBytes: v.FILES_MAX_BYTES,
      orgQuotaBytes: v.FILES_ORG_QUOTA_BYTES,
      textMaxChars: v.FILES_TEXT_MAX_CHARS,
    },
  }),
})

export type FilesSettings = SettingsOf<typeof filesSettings>['files']
