/** The fresh directory a run's files are written to before the sandbox copies them in, and its removal. */
import { lchown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

/** A request the sandbox refuses before launching anything: the message names the offending field. */
export class SandboxRequestError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`)
    this.name = 'SandboxRequestError'
  }
}

const MAX_FILES = 500
const MAX_SEGMENT = 255

/** Why `path` cannot name a file in the run directory, or undefined when it can. */
export function filePathProblem(path: string): string | undefined {
  if (path === '') return 'must not be empty'
  if (path.startsWith('/')) return 'must be relative'
  if (/[\0\\]/.test(path)) return 'must not contain NUL or backslash'
  const segments = path.split('/')
  if (segments.some((s) => s === '' || s === '.')) return 'must not contain empty or "." segments'
  if (segments.includes('..')) return 'must not contain ".."'
  if (segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT)) return `segments must be at most ${MAX_SEGMENT} bytes`
  return undefined
}

export function validateFiles(files: Readonly<Record<string, string>>): void {
  if (files === null || typeof files !== 'object') throw new SandboxRequestError('files', 'must be an object of path to content')
  const paths = Object.keys(files)
  if (paths.length > MAX_FILES) throw new SandboxRequestError('files', `at most ${MAX_FILES} files, got ${paths.length}`)
  for (const path of paths) {
    const problem = filePathProblem(path)
    if (problem) throw new SandboxRequestError(`files.${path}`, problem)
    if (typeof files[path] !== 'string') throw new SandboxRequestError(`files.${path}`, 'content must be a string')
  }
  // "a" as a file and "a/b" as another would need "a" to be both a file and a directory.
  const set = new Set(paths)
  for (const path of paths) {
    const segments = path.split('/')
    for (let i = 1; i < segments.length; i++) {
      const parent = segments.slice(0, i).join('/')
      if (set.has(parent)) throw new SandboxRequestError(`files.${parent}`, `is a file but "${path}" needs it to be a directory`)
    }
  }
}

/**
 * Writes `files` into a new directory under `root` (mode 0700, files 0600: no one else reads them), all owned by
 * `owner` when given: the run's uid, which copies them into the sandbox itself (bubblewrap).
 */
export async function createWorkspace(root: string, files: Readonly<Record<string, string>>, owner?: number): Promise<string> {
  await mkdir(root, { recursive: true })
  const dir = await mkdtemp(join(root, 'sandbox-'))
  const made = new Set([dir])
  for (const [path, content] of Object.entries(files)) {
    const target = join(dir, path)
    for (let parent = dirname(target); parent !== dir; parent = dirname(parent)) made.add(parent)
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, content, { mode: 0o600 })
    made.add(target)
  }
  // Nothing but the service writes here (paths were validated: no links, no '..'), so no link is followed.
  if (owner !== undefined) await Promise.all([...made].map((path) => lchown(path, owner, owner)))
  return dir
}

export async function removeWorkspace(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true })
}
