/**
 * The languages the sandbox runs, how their source is parsed before running, and the command that runs it.
 * TypeScript and JavaScript are parsed here with Bun's transpiler; Python is parsed inside the sandbox, by the
 * sandbox's own python3, before the program runs: the service never runs a parser of the host's on the code.
 */

export type SandboxLanguage = 'typescript' | 'javascript' | 'python'

export const SANDBOX_LANGUAGES: readonly SandboxLanguage[] = ['typescript', 'javascript', 'python']

type Loader = 'ts' | 'tsx' | 'js' | 'jsx'

interface LanguageSpec {
  /** Loader for code given without a file name; none for Python, parsed inside the sandbox. */
  readonly loader?: Loader
  /** File run in `run` mode when the request names no entry. */
  readonly defaultEntry: string
}

const languages: Readonly<Record<SandboxLanguage, LanguageSpec>> = {
  typescript: { loader: 'ts', defaultEntry: 'main.ts' },
  javascript: { loader: 'js', defaultEntry: 'main.js' },
  python: { defaultEntry: 'main.py' },
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
    const messages: BuildMessageLike[] = err instanceof AggregateError ? (err.errors as BuildMessageLike[]) : [err as BuildMessageLike]
    return { ok: false, message: messages.map((m) => describeBuildMessage(file, m)).join('\n') }
  }
}

/** Parses `code` in this process; Python passes here and is parsed inside the sandbox when it runs. */
export function checkSyntax(language: SandboxLanguage, code: string): SyntaxCheck {
  const spec = languages[language]
  if (!spec.loader) return { ok: true }
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

/** Exit status of the Python runner when a file does not parse; with PYTHON_SYNTAX_MARKER first on its line. */
export const PYTHON_SYNTAX_EXIT = 86
export const PYTHON_SYNTAX_MARKER = 'sandbox-python-syntax-error: '

/**
 * Run inside the sandbox by python3 in isolated mode: compiles every .py file of the directory first (a syntax
 * error is reported like a compiler's, marked, with PYTHON_SYNTAX_EXIT), then runs the entry as __main__, or in
 * test mode discovers and runs the unittest tests (files named test*.py or *_test.py).
 */
const PYTHON_RUNNER = `import os, runpy, sys, unittest
sys.path.insert(0, os.getcwd())
for root, dirs, names in os.walk('.'):
    dirs.sort()
    for name in sorted(names):
        if not name.endswith('.py'):
            continue
        path = os.path.join(root, name)[2:]
        try:
            with open(path, 'rb') as source:
                compile(source.read(), path, 'exec')
        except SyntaxError as e:
            where = f"{e.filename}:{e.lineno}:{e.offset}" if e.lineno else path
            caret = f"\\n  {e.text.rstrip()}\\n  {' ' * max((e.offset or 1) - 1, 0)}^" if e.text else ''
            print(f"${PYTHON_SYNTAX_MARKER}{where}: {type(e).__name__}: {e.msg}{caret}", flush=True)
            sys.exit(${PYTHON_SYNTAX_EXIT})
if sys.argv[1] == 'test':
    found = unittest.defaultTestLoader.discover('.', pattern='test*.py')
    found.addTests(unittest.defaultTestLoader.discover('.', pattern='*_test.py'))
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(found)
    sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)
sys.argv = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name='__main__')
`

/** The command that runs Python code in the sandbox: `-I` ignores PYTHON* variables and user site-packages, `-B` writes no .pyc, `-u` keeps stdout and stderr in order. */
export function pythonCommand(pythonPath: string, mode: 'run' | 'test', entry: string): string[] {
  return [pythonPath, '-I', '-B', '-u', '-c', PYTHON_RUNNER, mode, entry]
}

/** A Python run's output with the syntax marker taken out, and whether it was a syntax error. */
export function pythonSyntaxError(exitCode: number | null, output: string): string | undefined {
  if (exitCode !== PYTHON_SYNTAX_EXIT) return undefined
  const at = output.lastIndexOf(PYTHON_SYNTAX_MARKER)
  return at < 0 ? undefined : output.slice(at + PYTHON_SYNTAX_MARKER.length).trim()
}
