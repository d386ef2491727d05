/**
 * Analysis of a checked-out tree, reported as it goes: languages by bytes and lines, file and directory counts,
 * manifests (package managers, dependencies, frameworks), entry points, test directories, licence, README summary
 * and the largest files. Every entry is lstat-ed and files are opened with O_NOFOLLOW: a symlink is recorded as a
 * link with its target and never walked. The one exception is a README at the root that links to a file inside
 * the repository (`README.md -> docs/README.md`), whose target is read for the summary once its real path is
 * known to stay in the tree, so `README.md -> /etc/hostname` still cannot make the analyser read the host's
 * file. Manifests are listed root first, then by depth, so a monorepo's main package is never left out.
 * Nothing is executed.
 */
import { constants } from 'node:fs'
import { lstat, readFile, readdir, readlink, realpath } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { RepositoryAnalysis } from '../schemas.ts'
import { detectLicense, isLicenseFile, isReadmeFile, summariseReadme } from './documents.ts'
import { countLines, isBinary, languageOf } from './languages.ts'
import { isManifestFile, isParsedManifest, readManifest, type ManifestFinding } from './manifests.ts'

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
// tests, spec, e2e, unit_tests, integration-tests, api-tests, tests_e2e, testdata, cypress...
const TEST_DIRECTORY =
  /^(tests?|__tests__|__test__|specs?|e2e|testing|testdata|test[-_]?data|fixtures|cypress|playwright|end[-_]to[-_]end|[\w.-]+[-_]tests?|tests?[-_][\w.-]+|unittests?|testsuites?)$/i
// Maven and Gradle source sets, whatever their name: src/test, src/androidTest, src/integrationTest.
const TEST_SOURCE_SET = /(^|\/)src\/(test|\w+Test)$/
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
  const manifestPaths: string[] = []
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
    languages: [...languages]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, 5)
      .map(([name, s]) => ({ name, bytes: s.bytes })),
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
    if (isManifestFile(name) && !VENDORED.test(path)) manifestPaths.push(path)
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
        if (!directory && isReadmeFile(name) && (!readme || /\.md$/i.test(name))) {
          const text = await readInsideTree(tree, absolute, options.maxFileBytes)
          if (text !== undefined) readme = { path, ...summariseReadme(text) }
        }
      } else if (stat.isDirectory()) {
        totals.directories++
        if ((TEST_DIRECTORY.test(name) || TEST_SOURCE_SET.test(path)) && !VENDORED.test(path) && testDirectories.length < MAX_TEST_DIRECTORIES)
          testDirectories.push(path)
        pending.push(path)
      } else if (stat.isFile()) regular.push({ path, absolute, size: stat.size })
    }
    for (let i = 0; i < regular.length; i += PARALLEL_READS) {
      signal?.throwIfAborted()
      await Promise.all(regular.slice(i, i + PARALLEL_READS).map((file) => visitFile(file.path, file.absolute, file.size)))
    }
  }

  const manifests = await readManifests(tree, manifestPaths, signal)
  const knownBytes = [...languages.values()].reduce((sum, s) => sum + s.bytes, 0)
  const declared = manifests.flatMap((m) => m.entryPoints)
  const entryPoints = [
    ...new Set([...declared.filter((path) => files.has(path)), ...[...files.keys()].filter((path) => CONVENTIONAL_ENTRY_POINTS.some((p) => p.test(path)))]),
  ]
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
    manifests: manifests.flatMap((m) => (m.manifest ? [m.manifest] : [])),
    entryPoints: entryPoints.sort().slice(0, MAX_ENTRY_POINTS),
    testDirectories: testDirectories.sort(),
    license,
    readme,
    largestFiles: largest,
  }
  return { analysis, files }
}

const depthOf = (path: string) => path.split('/').length

/**
 * Every manifest and lock file found, root first, then by depth and path: each names its package manager, and
 * the first MAX_MANIFESTS that list dependencies are read and parsed (O_NOFOLLOW, at most MAX_MANIFEST_BYTES).
 */
async function readManifests(tree: string, paths: string[], signal: AbortSignal | undefined): Promise<ManifestFinding[]> {
  const findings: ManifestFinding[] = []
  let parsed = 0
  for (const path of paths.sort((a, b) => depthOf(a) - depthOf(b) || (a < b ? -1 : a > b ? 1 : 0))) {
    signal?.throwIfAborted()
    const name = path.slice(path.lastIndexOf('/') + 1)
    if (!isParsedManifest(name)) {
      findings.push(readManifest(path, undefined))
      continue
    }
    if (parsed >= MAX_MANIFESTS) continue
    parsed++
    const absolute = join(tree, path)
    const { size } = await lstat(absolute)
    const content = size <= MAX_MANIFEST_BYTES ? await readFile(absolute, { flag: READ_FLAGS }) : undefined
    findings.push(readManifest(path, content && !isBinary(content) ? content.toString('utf8') : undefined))
  }
  return findings
}

/** The text of the regular file a link leads to, when its real path stays inside the tree; else undefined. */
async function readInsideTree(tree: string, link: string, maxBytes: number): Promise<string | undefined> {
  try {
    const [root, target] = await Promise.all([realpath(tree), realpath(link)])
    if (!target.startsWith(root + sep)) return undefined
    const stat = await lstat(target)
    if (!stat.isFile() || stat.size > maxBytes) return undefined
    const content = await readFile(target, { flag: READ_FLAGS })
    return isBinary(content) ? undefined : content.toString('utf8')
  } catch {
    // A dangling or looping link has no readme to give.
    return undefined
  }
}
