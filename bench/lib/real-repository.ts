/**
 * A repository of real code with real history, built at bench time from source trees already on this machine
 * (the project's node_modules and Python's standard library): each package arrives in three versions, one
 * commit each, in turns, so the history holds several versions of most files and the pack holds deltas between
 * them, as a project's own history would. The last version of every file is the file as it is on disk.
 * Deterministic: the same sources give the same commits, ids included. Never committed.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const nodeModules = join(import.meta.dir, '..', '..', 'node_modules')

/** A source tree and where it goes in the repository. */
interface Source {
  from: string
  to: string
  /** The package's manifest, copied beside its sources. */
  manifest?: string
}

const npm = (pkg: string, dir: string, to = pkg.replace(/^@/, '').replace('/', '-')): Source => ({
  from: join(nodeModules, pkg, dir),
  to: `packages/${to}`,
  manifest: join(nodeModules, pkg, 'package.json'),
})

// Mid-size source files of many authors: TypeScript sources first, then built JavaScript and declarations.
const SOURCES: Source[] = [
  npm('ai', 'src'),
  npm('happy-dom', 'src'),
  npm('katex', 'src'),
  npm('openai', 'src'),
  npm('pdf-lib', 'src'),
  npm('zod', 'src'),
  npm('@ai-sdk/provider', 'src'),
  npm('@ai-sdk/provider-utils', 'src'),
  npm('@ai-sdk/gateway', 'src'),
  npm('@swc/helpers', 'src'),
  npm('stripe', 'esm'),
  npm('stripe', 'cjs', 'stripe-cjs'),
  npm('@sinclair/typebox', 'build/esm'),
  npm('@sinclair/typebox', 'build/cjs', 'typebox-cjs'),
  npm('@orama/orama', 'dist/esm'),
  npm('@orama/orama', 'dist/commonjs', 'orama-cjs'),
  npm('hono', 'dist'),
  npm('elysia', 'dist'),
  npm('@modelcontextprotocol/sdk', 'dist/esm'),
  npm('ajv', 'lib'),
  npm('axios', 'lib'),
  npm('@types/node', ''),
  npm('arktype', 'out'),
  npm('@ark/schema', 'out'),
  npm('@ark/util', 'out'),
  npm('happy-dom', 'lib', 'happy-dom-lib'),
  { from: '/usr/lib/python3.11', to: 'python/Lib' },
]

const PATTERN = '**/*.{ts,tsx,js,mjs,cjs,py,md,json}'
const MAX_FILE_BYTES = 256 * 1024

export interface RealRepositoryStats {
  files: number
  bytes: number
  commits: number
  sources: number
}

// FNV-1a: a stable choice of files and cut points across runs and Bun versions.
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** A file as it was in version `stage` (1 or 2) of its package, or undefined when it did not exist yet. */
function earlierVersion(path: string, content: Buffer, stage: 1 | 2): Buffer | undefined {
  const h = hash(path)
  if (h % 10 >= (stage === 1 ? 6 : 9)) return undefined
  const text = content.toString('latin1')
  const lines = text.split('\n')
  // Files grew: the first version has the first 60% of the lines; the second 85%, less a block in the middle.
  const kept = lines.slice(0, Math.ceil(lines.length * (stage === 1 ? 0.6 : 0.85)))
  if (stage === 2 && kept.length > 40) {
    const at = Math.floor(kept.length * (0.3 + (h % 7) / 100))
    kept.splice(at, Math.max(2, Math.floor(kept.length / 25)))
  }
  return Buffer.from(kept.join('\n'), 'latin1')
}

function sourceFiles(source: Source): { path: string; content: Buffer }[] {
  if (!existsSync(source.from)) return []
  const files: { path: string; content: Buffer }[] = []
  const paths = [...new Bun.Glob(PATTERN).scanSync({ cwd: source.from, followSymlinks: false })]
    .filter((path) => !path.split('/').includes('node_modules'))
    .sort()
  for (const path of paths) {
    const size = Bun.file(join(source.from, path)).size
    if (size === 0 || size > MAX_FILE_BYTES) continue
    files.push({ path: `${source.to}/${path}`, content: readFileSync(join(source.from, path)) })
  }
  if (source.manifest && existsSync(source.manifest)) files.push({ path: `${source.to}/package.json`, content: readFileSync(source.manifest) })
  return files
}

/**
 * Builds the repository as the bare repository `gitdir` (created), packed as a hosting service keeps one:
 * one pack with deltas and a reachability bitmap. Answers what it holds at its last commit.
 */
export async function buildRealRepository(gitdir: string): Promise<RealRepositoryStats> {
  mkdirSync(gitdir, { recursive: true })
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: gitdir }
  const git = async (args: string[], stdin?: ReadableStream<Uint8Array>) => {
    const child = Bun.spawn(['git', ...args], { cwd: gitdir, env, stdin: stdin ?? 'ignore', stdout: 'ignore', stderr: 'pipe' })
    if ((await child.exited) !== 0) throw new Error(`git ${args.join(' ')}: ${await new Response(child.stderr).text()}`)
  }
  await git(['init', '-q', '--bare', '-b', 'main'])

  const packages = SOURCES.map((source) => ({ source, files: sourceFiles(source) })).filter((p) => p.files.length > 0)
  let files = 0
  let bytes = 0
  for (const { files: list } of packages)
    for (const file of list) {
      files++
      bytes += file.content.byteLength
    }

  // git fast-import builds every commit in one process; its stream is written as it is produced.
  const stream = new ReadableStream<Uint8Array>({
    type: 'direct',
    async pull(controller) {
      const write = (data: string | Uint8Array) => controller.write(data)
      let commits = 0
      const commit = async (message: string, entries: { path: string; content: Buffer | null }[]) => {
        const time = 1_700_000_000 + commits * 3600
        const text = `${message}\n`
        write(`commit refs/heads/main\ncommitter Bench <bench@example.com> ${time} +0000\ndata ${Buffer.byteLength(text)}\n${text}`)
        for (const { path, content } of entries) {
          if (content === null) write(`D ${path}\n`)
          else {
            write(`M 100644 inline ${path}\ndata ${content.byteLength}\n`)
            write(content)
            write('\n')
          }
        }
        write('\n')
        commits++
        await controller.flush()
      }
      await commit('Initial commit', [{ path: 'README.md', content: Buffer.from('# Real code\n\nSources of several projects, for the import benchmark.\n') }])
      for (const stage of [1, 2, 3] as const)
        for (const { source, files: list } of packages) {
          const entries = list.flatMap(({ path, content }) => {
            const version = stage === 3 ? content : earlierVersion(path, content, stage)
            return version ? [{ path, content: version }] : []
          })
          await commit(`${source.to}: version ${stage}`, entries)
        }
      write('done\n')
      controller.close()
    },
  })
  await git(['fast-import', '--quiet', '--done'], stream)
  await git(['repack', '-a', '-d', '-b', '-q'])
  await git(['prune-packed'])
  return { files: files + 1, bytes, commits: 1 + packages.length * 3, sources: packages.length }
}
