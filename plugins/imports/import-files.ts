/**
 * The files of one import, read from the object store at the import's own commit rather than from the shared
 * checkout, so a later import of the same repository cannot change what an earlier import id names. Symlinks
 * and submodules are left out: they have no content of their own to hand on.
 */
import * as fs from 'node:fs'
import { AppError } from '../../src/errors.ts'
import { isomorphicGit } from './git.ts'

export interface ImportFile {
  /** Path relative to the directory that was read. */
  path: string
  bytes: Uint8Array
}

export interface ImportFilesRequest {
  /** Directory inside the repository, `/` separated, no leading or trailing slash; empty for the root. */
  directory: string
  /** Reading stops past this many files; the answer then says `exceeded`. */
  maxFiles: number
  /** Reading stops past this many bytes in all; the answer then says `exceeded`. */
  maxBytes: number
}

export interface ImportFiles {
  commit: string
  files: ImportFile[]
  /** Symlinks and submodules under the directory, not included. */
  skipped: string[]
  /** Which limit was passed; `files` is then incomplete and must not be used as the whole. */
  exceeded?: 'files' | 'bytes'
}

const MODE_LINK = 0o120000

/** Whether `path` is `directory`, inside it, or one of its parents (the walk must pass through those). */
function onTheWay(path: string, directory: string): boolean {
  if (directory === '' || path === directory || path.startsWith(`${directory}/`)) return true
  return directory.startsWith(`${path}/`)
}

export async function readImportFiles(gitdir: string, commit: string, request: ImportFilesRequest): Promise<ImportFiles> {
  const { directory, maxFiles, maxBytes } = request
  const prefix = directory === '' ? '' : `${directory}/`
  const answer: ImportFiles = { commit, files: [], skipped: [] }
  let bytes = 0
  const cache = {}
  const git = await isomorphicGit()
  await git.walk({
    fs,
    gitdir,
    cache,
    trees: [git.TREE({ ref: commit })],
    map: async (path, [entry]) => {
      if (answer.exceeded || !entry) return null
      if (path === '.') return true
      if (!onTheWay(path, directory)) return null
      const type = await entry.type()
      if (type === 'tree') return true
      if (!path.startsWith(prefix)) return null
      const relative = path.slice(prefix.length)
      if (type === 'commit' || (await entry.mode()) === MODE_LINK) {
        answer.skipped.push(relative)
        return null
      }
      if (answer.files.length >= maxFiles) {
        answer.exceeded = 'files'
        return null
      }
      const { blob } = await git.readBlob({ fs, gitdir, cache, oid: await entry.oid() })
      bytes += blob.byteLength
      if (bytes > maxBytes) {
        answer.exceeded = 'bytes'
        return null
      }
      answer.files.push({ path: relative, bytes: blob })
      return null
    },
  })
  return answer
}

/** A repository directory as given by a caller: `site`, `docs/public/`, `/` or empty for the root. */
export function normaliseDirectory(field: string, value: string): string {
  const directory = value.replace(/^\/+|\/+$/g, '')
  const segments = directory === '' ? [] : directory.split('/')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a path segment holding a control character is refused
  if (segments.some((s) => s === '' || s === '.' || s === '..' || s.toLowerCase() === '.git' || /[\u0000-\u001f\u007f\\]/.test(s))) {
    const message = `"${value}" must be a directory inside the repository, / separated, without . or .. segments`
    throw new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] })
  }
  return directory
}
