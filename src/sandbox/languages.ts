/** The languages the sandbox runs, how their source is parsed before running, and the command that runs it. */

export type SandboxLanguage = 'typescript' | 'javascript'

export const SANDBOX_LANGUAGES: readonly SandboxLanguage[] = ['typescript', 'javascript']

type Loader = 'ts' | 'tsx' | 'js' | 'jsx'

interface LanguageSpec {
  /** Loader for code given without a file name. */
  readonly loader: Loader
  /** File run in `run` mode when the request names no entry. */
  readonly defaultEntry: string
}

const languages: Readonly<Record<SandboxLanguage, LanguageSpec>> = {
  typescript: { loader: 'ts', defaultEntry: 'main.ts' },
  javascript: { loader: 'js', defaultEntry: 'main.js' },
}

/** Loader of each source extension Bun runs; other files (JSON, text fixtures) are copied but not parsed. */
const loaderByExtension: Readonly<Record<string, Loader>> = {
  '.ts': 'ts',
  '.mts': 'ts',
  '.cts': 'ts',
  '.tsx': 'tsx',
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.jsx': 'jsx',
}

export function defaultEntry(language: SandboxLanguage): string {
  return languages[language].defaultEntry
}

export function loaderForFile(path: string): Loader | undefined {
  const dot = path.lastIndexOf('.')
  return dot < 0 ? undefined : loaderByExtension[path.slice(dot).toLowerCase()]
}

export type SyntaxCheck = { ok: true } | { ok: false; message: string }

// One transpiler per loader, created on first use: building one parses options and allocates.
const transpilers = new Map<Loader, Bun.Transpiler>()
const transpilerFor = (loader: Loader) => {
  let transpiler = transpilers.get(loader)
  if (!transpiler) transpilers.set(loader, (transpiler = new Bun.Transpiler({ loader })))
  return transpiler
}

interface BuildMessageLike {
  message: string
  position?: { line: number; column: number; lineText?: string } | null
}

/** `file:line:column: message`, then the offending line with a caret, like a compiler prints it. */
function describeBuildMessage(file: string, m: BuildMessageLike): string {
  const p = m.position
  if (!p) return `${file}: ${m.message}`
  const caret = p.lineText === undefined ? '' : `\n  ${p.lineText}\n  ${' '.repeat(Math.max(p.column - 1, 0))}^`
  return `${file}:${p.line}:${p.column}: ${m.message}${caret}`
}

/** Parses `code` with Bun's transpiler in this process: no file, no child process. */
export function checkSyntaxWith(loader: Loader, code: string, file: string): SyntaxCheck {
  try {
    transpilerFor(loader).transformSync(code)
    return { ok: true }
  } catch (err) {
    const messages: BuildMessageLike[] =
      err instanceof AggregateError ? (err.errors as BuildMessageLike[]) : [err as BuildMessageLike]
    return { ok: false, message: messages.map((m) => describeBuildMessage(file, m)).join('\n') }
  }
}

export function checkSyntax(language: SandboxLanguage, code: string): SyntaxCheck {
  const spec = languages[language]
  return checkSyntaxWith(spec.loader, code, `input.${spec.loader}`)
}

/** The first source file among `files` that does not parse, with its message. */
export function checkFiles(files: Readonly<Record<string, string>>): SyntaxCheck {
  for (const [path, code] of Object.entries(files)) {
    const loader = loaderForFile(path)
    if (!loader) continue
    const result = checkSyntaxWith(loader, code, path)
    if (!result.ok) return result
  }
  return { ok: true }
}

/**
 * The command run inside the sandbox. Auto-install is off: it would reach for the package registry,
 * which the sandbox cannot reach anyway, and fail with a less clear message. The entry is given as
 * `./entry` so `bun run` treats it as a file, never as a package.json script name.
 */
export function sandboxCommand(bunPath: string, mode: 'run' | 'test', entry: string): string[] {
  return mode === 'test' ? [bunPath, 'test', '--no-install'] : [bunPath, '--no-install', 'run', `./${entry}`]
}
