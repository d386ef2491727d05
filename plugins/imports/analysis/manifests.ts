/**
 * What manifest and lock files say about a repository: its package managers, the dependencies each manifest
 * lists, the frameworks those dependencies reveal, declared entry points and licence. Every file is untrusted
 * input: parsers never throw out of here and nothing is evaluated.
 */
import { posix } from 'node:path'

type Dependency = { name: string; version?: string; dev: boolean }

export interface ManifestFinding {
  manifest?: { path: string; kind: string; ecosystem: string; name?: string; dependencies: Dependency[]; truncated: boolean }
  packageManagers: string[]
  frameworks: string[]
  /** Repository-relative paths the manifest declares as entry points (existence is checked by the caller). */
  entryPoints: string[]
  /** Licence the manifest declares (an SPDX expression, as written). */
  license?: string
}

export const MAX_DEPENDENCIES = 200

/** Lock and marker files that name the package manager by their presence alone. */
const PACKAGE_MANAGER_FILES: Record<string, string> = {
  'package-lock.json': 'npm',
  'npm-shrinkwrap.json': 'npm',
  'yarn.lock': 'yarn',
  'pnpm-lock.yaml': 'pnpm',
  'pnpm-workspace.yaml': 'pnpm',
  'bun.lock': 'bun',
  'bun.lockb': 'bun',
  'deno.lock': 'deno',
  'deno.json': 'deno',
  'deno.jsonc': 'deno',
  pipfile: 'pipenv',
  'pipfile.lock': 'pipenv',
  'poetry.lock': 'poetry',
  'uv.lock': 'uv',
  'pdm.lock': 'pdm',
  'setup.py': 'pip',
  'cargo.lock': 'cargo',
  'go.sum': 'go modules',
  'gemfile.lock': 'bundler',
  'composer.lock': 'composer',
  'mix.lock': 'mix',
  'pubspec.lock': 'pub',
  gradlew: 'gradle',
  mvnw: 'maven',
  'packages.lock.json': 'nuget',
}

const MANIFEST_KINDS = new Set([
  'package.json',
  'pyproject.toml',
  'pipfile',
  'go.mod',
  'cargo.toml',
  'gemfile',
  'composer.json',
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
  'mix.exs',
  'pubspec.yaml',
])

/** Whether the analyser should read this file as a manifest or lock file. */
export function isManifestFile(name: string): boolean {
  const lower = name.toLowerCase()
  return MANIFEST_KINDS.has(lower) || lower in PACKAGE_MANAGER_FILES || /^requirements([-_.][\w.-]*)?\.txt$/.test(lower)
}

/** Whether the file lists dependencies to parse (a manifest), rather than naming its package manager by its presence. */
export function isParsedManifest(name: string): boolean {
  const lower = name.toLowerCase()
  return MANIFEST_KINDS.has(lower) || /^requirements([-_.][\w.-]*)?\.txt$/.test(lower)
}

const LOCK_FILES = new Set([
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
  'deno.lock',
  'pipfile.lock',
  'poetry.lock',
  'uv.lock',
  'pdm.lock',
  'cargo.lock',
  'go.sum',
  'gemfile.lock',
  'composer.lock',
  'mix.lock',
  'pubspec.lock',
  'packages.lock.json',
])

/** Generated lock files: their content is never parsed, and search leaves them out. */
export function isLockFile(name: string): boolean {
  return LOCK_FILES.has(name.toLowerCase())
}

const FRAMEWORKS: Record<string, Record<string, string>> = {
  npm: {
    react: 'React',
    next: 'Next.js',
    vue: 'Vue',
    nuxt: 'Nuxt',
    svelte: 'Svelte',
    '@sveltejs/kit': 'SvelteKit',
    '@angular/core': 'Angular',
    'solid-js': 'Solid',
    astro: 'Astro',
    '@remix-run/react': 'Remix',
    gatsby: 'Gatsby',
    express: 'Express',
    fastify: 'Fastify',
    koa: 'Koa',
    hono: 'Hono',
    elysia: 'Elysia',
    '@nestjs/core': 'NestJS',
    electron: 'Electron',
    'react-native': 'React Native',
    expo: 'Expo',
    tailwindcss: 'Tailwind CSS',
    vite: 'Vite',
    jest: 'Jest',
    vitest: 'Vitest',
    mocha: 'Mocha',
    '@playwright/test': 'Playwright',
    prisma: 'Prisma',
  },
  pypi: {
    django: 'Django',
    flask: 'Flask',
    fastapi: 'FastAPI',
    starlette: 'Starlette',
    tornado: 'Tornado',
    pyramid: 'Pyramid',
    streamlit: 'Streamlit',
    pytest: 'pytest',
    torch: 'PyTorch',
    tensorflow: 'TensorFlow',
    'scikit-learn': 'scikit-learn',
    sqlalchemy: 'SQLAlchemy',
    celery: 'Celery',
  },
  go: {
    'github.com/gin-gonic/gin': 'Gin',
    'github.com/labstack/echo': 'Echo',
    'github.com/labstack/echo/v4': 'Echo',
    'github.com/gofiber/fiber': 'Fiber',
    'github.com/gofiber/fiber/v2': 'Fiber',
    'github.com/gorilla/mux': 'Gorilla mux',
    'github.com/go-chi/chi': 'chi',
    'github.com/go-chi/chi/v5': 'chi',
    'github.com/spf13/cobra': 'Cobra',
    'gorm.io/gorm': 'GORM',
  },
  cargo: {
    'actix-web': 'Actix Web',
    axum: 'Axum',
    rocket: 'Rocket',
    warp: 'warp',
    tokio: 'Tokio',
    bevy: 'Bevy',
    tauri: 'Tauri',
    clap: 'clap',
    diesel: 'Diesel',
  },
  rubygems: { rails: 'Ruby on Rails', sinatra: 'Sinatra', rspec: 'RSpec', hanami: 'Hanami' },
  packagist: { 'laravel/framework': 'Laravel', 'symfony/framework-bundle': 'Symfony', 'slim/slim': 'Slim', 'phpunit/phpunit': 'PHPUnit' },
  maven: {
    'spring-boot-starter': 'Spring Boot',
    'spring-boot-starter-web': 'Spring Boot',
    'quarkus-core': 'Quarkus',
    junit: 'JUnit',
    'junit-jupiter': 'JUnit',
  },
  hex: { phoenix: 'Phoenix', ecto: 'Ecto' },
  pub: { flutter: 'Flutter' },
}

function frameworksOf(ecosystem: string, dependencies: Dependency[]): string[] {
  const table = FRAMEWORKS[ecosystem] ?? {}
  const found = new Set<string>()
  for (const { name } of dependencies) {
    const framework = table[ecosystem === 'pypi' ? name.toLowerCase() : name]
    if (framework) found.add(framework)
    if (ecosystem === 'maven' && name.startsWith('spring-boot')) found.add('Spring Boot')
  }
  return [...found]
}

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

const versionOf = (value: unknown): string | undefined => {
  if (typeof value === 'string') return value
  const version = record(value).version
  return typeof version === 'string' ? version : undefined
}

function fromTable(table: unknown, dev: boolean): Dependency[] {
  return Object.entries(record(table)).map(([name, value]) => ({ name, version: versionOf(value), dev }))
}

// PEP 508: a name, then extras, version specifiers or markers.
function fromPep508(spec: unknown, dev: boolean): Dependency | undefined {
  if (typeof spec !== 'string') return undefined
  const match = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)/.exec(spec)
  if (!match) return undefined
  const version = match[2]!.trim()
  return { name: match[1]!, version: version || undefined, dev }
}

function finding(
  path: string,
  kind: string,
  ecosystem: string,
  name: string | undefined,
  dependencies: Dependency[],
  extra: Partial<ManifestFinding> = {},
): ManifestFinding {
  const unique = [...new Map(dependencies.map((d) => [`${d.name}\0${d.dev}`, d])).values()]
  return {
    manifest: { path, kind, ecosystem, name, dependencies: unique.slice(0, MAX_DEPENDENCIES), truncated: unique.length > MAX_DEPENDENCIES },
    frameworks: frameworksOf(ecosystem, unique),
    packageManagers: extra.packageManagers ?? [],
    entryPoints: extra.entryPoints ?? [],
    license: extra.license,
  }
}

const relativeTo = (manifestPath: string, target: string) => posix.normalize(posix.join(posix.dirname(manifestPath), target)).replace(/^\.\//, '')

function packageJson(path: string, text: string): ManifestFinding {
  const json = record(JSON.parse(text))
  const dependencies = [
    ...fromTable(json.dependencies, false),
    ...fromTable(json.peerDependencies, false),
    ...fromTable(json.optionalDependencies, false),
    ...fromTable(json.devDependencies, true),
  ]
  const entries: string[] = []
  for (const field of [json.main, json.module]) if (typeof field === 'string') entries.push(field)
  if (typeof json.bin === 'string') entries.push(json.bin)
  for (const value of Object.values(record(json.bin))) if (typeof value === 'string') entries.push(value)
  const managers = typeof json.packageManager === 'string' ? [json.packageManager.split('@')[0]!] : []
  return finding(path, 'package.json', 'npm', typeof json.name === 'string' ? json.name : undefined, dependencies, {
    packageManagers: managers,
    entryPoints: entries.map((entry) => relativeTo(path, entry)),
    license: typeof json.license === 'string' ? json.license : undefined,
  })
}

function pyproject(path: string, text: string): ManifestFinding {
  const toml = record(Bun.TOML.parse(text))
  const project = record(toml.project)
  const tool = record(toml.tool)
  const poetry = record(tool.poetry)
  const dependencies: Dependency[] = []
  for (const spec of Array.isArray(project.dependencies) ? project.dependencies : []) {
    const dependency = fromPep508(spec, false)
    if (dependency) dependencies.push(dependency)
  }
  for (const group of Object.values(record(project['optional-dependencies'])))
    for (const spec of Array.isArray(group) ? group : []) {
      const dependency = fromPep508(spec, true)
      if (dependency) dependencies.push(dependency)
    }
  dependencies.push(...fromTable(poetry.dependencies, false).filter((d) => d.name.toLowerCase() !== 'python'))
  dependencies.push(...fromTable(poetry['dev-dependencies'], true))
  for (const group of Object.values(record(poetry.group))) dependencies.push(...fromTable(record(group).dependencies, true))
  const managers = ['poetry', 'pdm', 'uv', 'hatch', 'flit'].filter((name) => name in tool)
  const license = typeof project.license === 'string' ? project.license : typeof poetry.license === 'string' ? poetry.license : undefined
  const name = typeof project.name === 'string' ? project.name : typeof poetry.name === 'string' ? poetry.name : undefined
  const scripts = [project.scripts, project['gui-scripts'], poetry.scripts].flatMap((table) => Object.values(record(table)))
  const entryPoints = scripts.flatMap((target) => pythonModuleFiles(target)).map((file) => relativeTo(path, file))
  return finding(path, 'pyproject.toml', 'pypi', name, dependencies, { packageManagers: managers.length ? managers : ['pip'], license, entryPoints })
}

/**
 * The files a Python entry point (`package.cli:main`) may live in: the module as a file or a package, at the
 * project's root or under src/. The analyser keeps the ones that exist.
 */
function pythonModuleFiles(target: unknown): string[] {
  const reference = typeof target === 'string' ? target : record(target).reference
  const module = typeof reference === 'string' ? /^\s*([A-Za-z_][\w.]*)/.exec(reference)?.[1] : undefined
  if (!module) return []
  const file = module.replace(/\./g, '/')
  return [`${file}.py`, `${file}/__init__.py`, `${file}/__main__.py`, `src/${file}.py`, `src/${file}/__init__.py`, `src/${file}/__main__.py`]
}

function requirements(path: string, text: string): ManifestFinding {
  const dependencies: Dependency[] = []
  const dev = /dev|test/i.test(posix.basename(path))
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s#.*$/, '').trim()
    if (!line || line.startsWith('#') || line.startsWith('-')) continue
    const dependency = fromPep508(line, dev)
    if (dependency) dependencies.push(dependency)
  }
  return finding(path, posix.basename(path), 'pypi', undefined, dependencies, { packageManagers: ['pip'] })
}

function pipfile(path: string, text: string): ManifestFinding {
  const toml = record(Bun.TOML.parse(text))
  return finding(path, 'Pipfile', 'pypi', undefined, [...fromTable(toml.packages, false), ...fromTable(toml['dev-packages'], true)], {
    packageManagers: ['pipenv'],
  })
}

function goMod(path: string, text: string): ManifestFinding {
  const name = /^module\s+(\S+)/m.exec(text)?.[1]
  const dependencies: Dependency[] = []
  const add = (line: string) => {
    const match = /^\s*(\S+)\s+(v\S+)(\s*\/\/\s*indirect)?/.exec(line)
    if (match && !match[3]) dependencies.push({ name: match[1]!, version: match[2], dev: false })
  }
  for (const block of text.matchAll(/^require\s*\(([\s\S]*?)^\)/gm)) for (const line of block[1]!.split('\n')) add(line)
  for (const single of text.matchAll(/^require\s+([^(\s].*)$/gm)) add(single[1]!)
  return finding(path, 'go.mod', 'go', name, dependencies, { packageManagers: ['go modules'] })
}

function cargoToml(path: string, text: string): ManifestFinding {
  const toml = record(Bun.TOML.parse(text))
  const pkg = record(toml.package)
  const dependencies = [...fromTable(toml.dependencies, false), ...fromTable(toml['dev-dependencies'], true), ...fromTable(toml['build-dependencies'], true)]
  const entries: string[] = []
  for (const bin of Array.isArray(toml.bin) ? toml.bin : []) {
    const binPath = record(bin).path
    if (typeof binPath === 'string') entries.push(relativeTo(path, binPath))
  }
  return finding(path, 'Cargo.toml', 'cargo', typeof pkg.name === 'string' ? pkg.name : undefined, dependencies, {
    packageManagers: ['cargo'],
    entryPoints: entries,
    license: typeof pkg.license === 'string' ? pkg.license : undefined,
  })
}

function gemfile(path: string, text: string): ManifestFinding {
  const dependencies: Dependency[] = []
  for (const match of text.matchAll(/^\s*gem\s+['"]([^'"]+)['"](?:\s*,\s*['"]([^'"]+)['"])?/gm))
    dependencies.push({ name: match[1]!, version: match[2], dev: false })
  return finding(path, 'Gemfile', 'rubygems', undefined, dependencies, { packageManagers: ['bundler'] })
}

function composerJson(path: string, text: string): ManifestFinding {
  const json = record(JSON.parse(text))
  const dependencies = [...fromTable(json.require, false), ...fromTable(json['require-dev'], true)].filter((d) => d.name.includes('/'))
  return finding(path, 'composer.json', 'packagist', typeof json.name === 'string' ? json.name : undefined, dependencies, {
    packageManagers: ['composer'],
    license: typeof json.license === 'string' ? json.license : undefined,
  })
}

function pomXml(path: string, text: string): ManifestFinding {
  const dependencies: Dependency[] = []
  for (const block of text.matchAll(/<dependency>([\s\S]*?)<\/dependency>/g)) {
    const artifact = /<artifactId>\s*([^<\s]+)\s*<\/artifactId>/.exec(block[1]!)?.[1]
    const version = /<version>\s*([^<\s]+)\s*<\/version>/.exec(block[1]!)?.[1]
    const scope = /<scope>\s*([^<\s]+)\s*<\/scope>/.exec(block[1]!)?.[1]
    if (artifact) dependencies.push({ name: artifact, version, dev: scope === 'test' })
  }
  const name = /<artifactId>\s*([^<\s]+)\s*<\/artifactId>/.exec(
    text.replace(/<parent>[\s\S]*?<\/parent>/, '').replace(/<dependencies>[\s\S]*<\/dependencies>/, ''),
  )?.[1]
  return finding(path, 'pom.xml', 'maven', name, dependencies, { packageManagers: ['maven'] })
}

function gradle(path: string, text: string): ManifestFinding {
  const dependencies: Dependency[] = []
  for (const match of text.matchAll(
    /\b(implementation|api|compileOnly|runtimeOnly|testImplementation|testRuntimeOnly)\s*\(?\s*['"]([^:'"]+):([^:'"]+)(?::([^'"]+))?['"]/g,
  ))
    dependencies.push({ name: match[3]!, version: match[4], dev: match[1]!.startsWith('test') })
  return finding(path, posix.basename(path), 'maven', undefined, dependencies, { packageManagers: ['gradle'] })
}

function mixExs(path: string, text: string): ManifestFinding {
  const dependencies: Dependency[] = []
  for (const match of text.matchAll(/\{\s*:([a-z_][a-z0-9_]*)\s*,\s*"([^"]+)"/g)) dependencies.push({ name: match[1]!, version: match[2], dev: false })
  return finding(path, 'mix.exs', 'hex', undefined, dependencies, { packageManagers: ['mix'] })
}

function pubspec(path: string, text: string): ManifestFinding {
  const yaml = record(Bun.YAML.parse(text))
  const dependencies = [...fromTable(yaml.dependencies, false), ...fromTable(yaml.dev_dependencies, true)]
  return finding(path, 'pubspec.yaml', 'pub', typeof yaml.name === 'string' ? yaml.name : undefined, dependencies, { packageManagers: ['pub'] })
}

const READERS: Record<string, (path: string, text: string) => ManifestFinding> = {
  'package.json': packageJson,
  'pyproject.toml': pyproject,
  pipfile,
  'go.mod': goMod,
  'cargo.toml': cargoToml,
  gemfile,
  'composer.json': composerJson,
  'pom.xml': pomXml,
  'build.gradle': gradle,
  'build.gradle.kts': gradle,
  'mix.exs': mixExs,
  'pubspec.yaml': pubspec,
}

/** Reads one manifest or lock file; a file that does not parse still counts for its package manager. */
export function readManifest(path: string, text: string | undefined): ManifestFinding {
  const name = posix.basename(path).toLowerCase()
  const byPresence = PACKAGE_MANAGER_FILES[name]
  const empty: ManifestFinding = { packageManagers: byPresence ? [byPresence] : [], frameworks: [], entryPoints: [] }
  const reader = READERS[name] ?? (/^requirements([-_.][\w.-]*)?\.txt$/.test(name) ? requirements : undefined)
  if (!reader || text === undefined) return empty
  try {
    const found = reader(path, text)
    return { ...found, packageManagers: [...new Set([...found.packageManagers, ...empty.packageManagers])] }
  } catch {
    return empty
  }
}
