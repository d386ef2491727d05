/**
 * Analysis of a checked-out tree, reported as it goes: languages by bytes and lines, file and directory counts,
 * manifests (package managers, dependencies, frameworks), entry points, test directories, licence, README summary
 * and the largest files. Every entry is lstat-ed and files are opened with O_NOFOLLOW: a symlink is recorded as a
 * link with its target and never followed, so `README.md -> /etc/hostname` cannot make the analyser read the
 * host's file. Nothing is executed.
 */
import { constants } from 'node:fs'
import { lstat, readFile, readdir, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { RepositoryAnalysis } from '../model.ts'
import { detectLicense, isLicenseFile, isReadmeFile, summariseReadme } from './documents.ts'
import { countLines, isBinary, languageOf } from './languages.ts'
import { isManifestFile, readManifest, type ManifestFinding } from './manifests.ts'

/** What the indexer needs to know about each regular file. */
export interface FileFacts {
  language: string | undefined
  binary: boolean
  bytes: number
}

export interface AnalysisProgress {
  partial: true
  files: number
  directories: number
  bytes: number
  lines: number
  languages: { name: string; bytes: number }[]
}

export interface AnalyseOptions {
  /** Files larger than this are counted but not read. */
  maxFileBytes: number
  signal?: AbortSignal
  onProgress?: (progress: AnalysisProgress) => void | Promise<void>
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW
const MAX_MANIFEST_BYTES = 1024 * 1024
const MAX_MANIFESTS = 50
const MAX_LINKS = 100
const MAX_TEST_DIRECTORIES = 50
const MAX_ENTRY_POINTS = 20
const LARGEST = 10
const PROGRESS_EVERY_FILES = 250
const PARALLEL_READS = 16

const VENDORED = /(^|\/)(node_modules|vendor|third_party|\.venv|venv|bower_components)(\/|$)/
const TEST_DIRECTORY = /^(tests?|__tests__|__test__|specs?|e2e|testing|integration[-_]tests?)$/i
const CONVENTIONAL_ENTRY_POINTS = [
  /^(src\/)?(index|main|app|server|cli)\.(ts|tsx|mts|js|jsx|mjs|cjs)$/,
  /^(src\/)?main\.(go|rs|py|c|cc|cpp|swift|kt|java|dart|zig|cs)$/,
  /^src\/lib\.rs$/,
  /^cmd\/[^/]+\/main\.go$/,
  /^(src\/)?(app|manage|wsgi|asgi|__main__)\.py$/,
  /^[^/]+\/__main__\.py$/,
  /^([^/]+\/)?Program\.cs$/,
  /^lib\/main\.dart$/,
  /^src\/main\/java\/.+\/(Application|Main)\.java$/,
]

export async function analyseTree(tree: string, options: AnalyseOptions): Promise<{ analysis: RepositoryAnalysis; files: Map<string, FileFacts> }> {
  const { signal } = options
  const files = new Map<string, FileFacts>()
  const languages = new Map<string, { files: number; bytes: number; lines: number }>()
  const links: RepositoryAnalysis['links'] = { count: 0, entries: [] }
  const manifests: ManifestFinding[] = []
  const testDirectories: string[] = []
  const largest: { path: string; bytes: number }[] = []
  const totals = { files: 0, directories: 0, bytes: 0, lines: 0, binaryFiles: 0 }
  let license: RepositoryAnalysis['license'] = null
  let readme: RepositoryAnalysis['readme'] = null
  let reported = 0

  const progress = (): AnalysisProgress => ({
    partial: true,
    files: totals.files,
    directories: totals.directories,
    bytes: totals.bytes,
    lines: totals.lines,
    languages: [...languages].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 5).map(([name, s]) => ({ name, bytes: s.bytes })),
  })

  function noteLargest(path: string, bytes: number) {
    if (largest.length === LARGEST && bytes <= largest[LARGEST - 1]!.bytes) return
    largest.push({ path, bytes })
    largest.sort((a, b) => b.bytes - a.bytes || (a.path < b.path ? -1 : 1))
    if (largest.length > LARGEST) largest.pop()
  }

  async function visitFile(path: string, absolute: string, size: number) {
    totals.files++
    totals.bytes += size
    noteLargest(path, size)
    const name = path.slice(path.lastIndexOf('/') + 1)
    const language = languageOf(path)
    const atRoot = !path.includes('/')
    const content = size <= options.maxFileBytes ? await readFile(absolute, { flag: READ_FLAGS }) : undefined
    const binary = content !== undefined && isBinary(content)
    if (binary) totals.binaryFiles++
    else if (content) {
      const lines = countLines(content)
      totals.lines += lines
      if (language) {
        const stats = languages.get(language) ?? { files: 0, bytes: 0, lines: 0 }
        stats.files++
        stats.bytes += size
        stats.lines += lines
        languages.set(language, stats)
      }
      if (atRoot && isLicenseFile(name) && (!license || license.spdx === null)) license = { path, spdx: detectLicense(content.toString('utf8')) }
      // README.md wins over README.rst or a bare README.
      if (atRoot && isReadmeFile(name) && (!readme || /\.md$/i.test(name))) readme = { path, ...summariseReadme(content.toString('utf8')) }
    }
    if (isManifestFile(name) && !VENDORED.test(path) && manifests.length < MAX_MANIFESTS)
      manifests.push(readManifest(path, content && !binary && size <= MAX_MANIFEST_BYTES ? content.toString('utf8') : undefined))
    files.set(path, { language: binary ? undefined : language, binary, bytes: size })
    if (totals.files - reported >= PROGRESS_EVERY_FILES) {
      reported = totals.files
      await options.onProgress?.(progress())
    }
  }

  const pending: string[] = ['']
  while (pending.length > 0) {
    signal?.throwIfAborted()
    const directory = pending.pop()!
    const entries = (await readdir(join(tree, directory))).sort()
    const regular: { path: string; absolute: string; size: number }[] = []
    for (const name of entries) {
      const path = directory ? `${directory}/${name}` : name
      const absolute = join(tree, path)
      const stat = await lstat(absolute)
      if (stat.isSymbolicLink()) {
        links.count++
        if (links.entries.length < MAX_LINKS) links.entries.push({ path, target: await readlink(absolute) })
      } else if (stat.isDirectory()) {
        totals.directories++
        if (TEST_DIRECTORY.test(name) && !VENDORED.test(path) && testDirectories.length < MAX_TEST_DIRECTORIES) testDirectories.push(path)
        else if (/(^|\/)src\/test$/.test(path) && testDirectories.length < MAX_TEST_DIRECTORIES) testDirectories.push(path)
        pending.push(path)
      } else if (stat.isFile()) regular.push({ path, absolute, size: stat.size })
    }
    for (let i = 0; i < regular.length; i += PARALLEL_READS) {
      signal?.throwIfAborted()
      await Promise.all(regular.slice(i, i + PARALLEL_READS).map((file) => visitFile(file.path, file.absolute, file.size)))
    }
  }

  const knownBytes = [...languages.values()].reduce((sum, s) => sum + s.bytes, 0)
  const declared = manifests.map((m) => m.entryPoints).flat()
  const entryPoints = [...new Set([...declared.filter((path) => files.has(path)), ...[...files.keys()].filter((path) => CONVENTIONAL_ENTRY_POINTS.some((p) => p.test(path)))])]
  if (!license) {
    const declaredLicense = manifests.find((m) => m.license && !m.manifest?.path.includes('/'))?.license ?? manifests.find((m) => m.license)?.license
    if (declaredLicense) license = { path: null, spdx: declaredLicense }
  }
  const analysis: RepositoryAnalysis = {
    ...totals,
    languages: [...languages]
      .map(([name, s]) => ({ name, ...s, share: knownBytes ? Math.round((s.bytes / knownBytes) * 10_000) / 10_000 : 0 }))
      .sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name)),
    links,
    frameworks: [...new Set(manifests.flatMap((m) => m.frameworks))].sort(),
    packageManagers: [...new Set(manifests.flatMap((m) => m.packageManagers))].sort(),
    manifests: manifests.flatMap((m) => (m.manifest ? [m.manifest] : [])).sort((a, b) => a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path)),
    entryPoints: entryPoints.sort().slice(0, MAX_ENTRY_POINTS),
    testDirectories: testDirectories.sort(),
    license,
    readme,
    largestFiles: largest,
  }
  return { analysis, files }
}
