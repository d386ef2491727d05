/**
 * Git for task workspaces, run by the service on the workspace's own bare Git directory and nothing else: no
 * work tree, no system or user configuration, no hooks, no fsmonitor, no attributes file, no external diff or
 * text conversion. Git never reads the tree the sandboxed commands write; the service reads it itself
 * (workspace-snapshot.ts) and hands Git the bytes, so nothing a command wrote (a nested `.git`, a config with
 * `core.fsmonitor`, a `.gitattributes` filter) can make the host run anything.
 */
import { mkdir } from 'node:fs/promises'

/** `-c` settings that disable everything that could run a program or read outside the Git directory. */
const LOCKED_CONFIG = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=',
  'core.attributesFile=/dev/null',
  'core.quotePath=false',
  'core.autocrlf=false',
  'diff.external=',
  'protocol.allow=never',
  // Small imports are written as loose objects, so a diff every few seconds does not leave a pack each time.
  'fastimport.unpackLimit=100',
]

export interface GitRun {
  stdout: Uint8Array
  text(): string
}

/** Runs git in `gitdir` (bare, no work tree) with `input` on stdin; throws with git's message on failure. */
export async function gitIn(gitdir: string, args: string[], input?: Blob): Promise<GitRun> {
  const child = Bun.spawn(['git', `--git-dir=${gitdir}`, ...LOCKED_CONFIG.flatMap((setting) => ['-c', setting]), ...args], {
    cwd: gitdir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ATTR_NOSYSTEM: '1',
      GIT_OPTIONAL_LOCKS: '0',
      GIT_TERMINAL_PROMPT: '0',
      HOME: gitdir,
      LANG: 'C',
    },
    stdin: input ?? 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(child.stdout).bytes(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`git ${args[0]} failed (${code}): ${err.trim().slice(0, 500)}`)
  return { stdout: out, text: () => new TextDecoder().decode(out) }
}

export async function initBare(gitdir: string): Promise<void> {
  await mkdir(gitdir, { recursive: true, mode: 0o700 })
  await gitIn(gitdir, ['init', '--quiet', '--bare'])
}

/** A file as Git stores it: a regular file (executable or not) or a symbolic link whose blob is its target. */
export type GitFileMode = '100644' | '100755' | '120000'

export interface BlobEntry {
  path: string
  mode: GitFileMode
  /** The blob's id, known to be in the Git directory already, or with `bytes` the id they will have. */
  oid: string
  /** The content, when the blob may not be stored yet. */
  bytes?: Uint8Array
}

/** The id Git gives a blob of `bytes`. */
export function blobId(bytes: Uint8Array): string {
  const hasher = new Bun.CryptoHasher('sha1')
  hasher.update(`blob ${bytes.byteLength}\0`)
  hasher.update(bytes)
  return hasher.digest('hex')
}

/** A path in fast-import's C-style quotes, so any byte a file name may hold (a quote, a newline) stays in it. */
function quotePath(path: string): string {
  let quoted = '"'
  for (const byte of Buffer.from(path)) {
    if (byte === 0x22) quoted += '\\"'
    else if (byte === 0x5c) quoted += '\\\\'
    else if (byte === 0x0a) quoted += '\\n'
    else if (byte < 0x20 || byte >= 0x7f) quoted += `\\${byte.toString(8).padStart(3, '0')}`
    else quoted += String.fromCharCode(byte)
  }
  return `${quoted}"`
}

/**
 * Writes `entries` as the whole tree of a new commit on `ref` (replacing what the ref held), whose parent is
 * `parent` when given, with one `git fast-import`. Answers the commit's id.
 */
export async function commitTree(
  gitdir: string,
  ref: string,
  entries: readonly BlobEntry[],
  options: { parent?: string; message: string; time?: Date },
): Promise<string> {
  const parts: (string | Uint8Array)[] = []
  const seconds = Math.floor((options.time ?? new Date()).getTime() / 1000)
  const message = Buffer.from(options.message)
  parts.push(`commit ${ref}\nmark :1\ncommitter agent <agent@localhost> ${seconds} +0000\ndata ${message.byteLength}\n`, message, '\n')
  if (options.parent) parts.push(`from ${options.parent}\n`)
  parts.push('deleteall\n')
  for (const entry of entries) {
    if (entry.bytes) parts.push(`M ${entry.mode} inline ${quotePath(entry.path)}\ndata ${entry.bytes.byteLength}\n`, entry.bytes, '\n')
    else parts.push(`M ${entry.mode} ${entry.oid} ${quotePath(entry.path)}\n`)
  }
  parts.push('\ndone\n')
  await gitIn(gitdir, ['fast-import', '--quiet', '--force', '--done', '--date-format=raw'], new Blob(parts as (string | Uint8Array<ArrayBuffer>)[]))
  return (await gitIn(gitdir, ['rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`])).text().trim()
}

export interface TreeChange {
  path: string
  status: 'added' | 'modified' | 'deleted'
}

/** The unified diff between two commits of the Git directory, and the paths it changes; no work tree is read. */
export async function diffCommits(gitdir: string, from: string, to: string): Promise<{ diff: string; files: TreeChange[] }> {
  const common = ['--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '--end-of-options', from, to]
  const [patch, names] = await Promise.all([
    gitIn(gitdir, ['diff', '--binary', '--full-index', ...common]),
    gitIn(gitdir, ['diff', '--name-status', '-z', ...common]),
  ])
  const parts = names.text().split('\0').filter(Boolean)
  const files: TreeChange[] = []
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const code = parts[i]!
    files.push({ path: parts[i + 1]!, status: code === 'A' ? 'added' : code === 'D' ? 'deleted' : 'modified' })
  }
  return { diff: patch.text(), files }
}

/** Paths of every file a commit holds. */
export async function pathsOf(gitdir: string, commit: string): Promise<string[]> {
  const listed = await gitIn(gitdir, ['ls-tree', '-r', '-z', '--name-only', '--end-of-options', commit])
  return listed.text().split('\0').filter(Boolean)
}

/** Whether `ref` names something in the Git directory. */
export async function refExists(gitdir: string, ref: string): Promise<boolean> {
  try {
    await gitIn(gitdir, ['show-ref', '--verify', '--quiet', ref])
    return true
  } catch {
    return false
  }
}

/** The content of each blob id, read with one `git cat-file --batch`. */
export async function readBlobs(gitdir: string, oids: readonly string[]): Promise<Map<string, Uint8Array>> {
  const found = new Map<string, Uint8Array>()
  if (oids.length === 0) return found
  const { stdout } = await gitIn(gitdir, ['cat-file', '--batch'], new Blob([oids.map((oid) => `${oid}\n`).join('')]))
  let at = 0
  for (const oid of oids) {
    const headerEnd = stdout.indexOf(0x0a, at)
    const header = new TextDecoder().decode(stdout.subarray(at, headerEnd)).split(' ')
    if (header[1] !== 'blob') throw new Error(`blob ${oid} is not in the workspace's Git directory`)
    const size = Number(header[2])
    found.set(oid, stdout.slice(headerEnd + 1, headerEnd + 1 + size))
    at = headerEnd + 1 + size + 1
  }
  return found
}
