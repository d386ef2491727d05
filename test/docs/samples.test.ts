/**
 * Every fenced code block of docs/**\/*.mdx and README.md, each its own test named by page, block index and first
 * line, by its language:
 * - `http`: the request examples, sent to a service by examples.test.ts; here only recognised as such.
 * - `ts` `typescript` `js` `tsx`: typechecked with the project's TypeScript, as the page says they are written
 *   (a front end beside the service's checkout: `../backend/...`), with the values a reader has (an access token,
 *   an email) declared.
 * - `bash` `sh` `shell` `console`: syntax-checked with `bash -n`, then each command run or checked: `npm start`
 *   started and awaited until it listens; `npm run admin -- ...` run against a storage of its own; `curl` blocks
 *   run by bash against a service started here (every upstream faked); `npx openapi-typescript` run against it,
 *   its output typechecking the sample that imports it; packages, npm scripts, variables, files and the admin
 *   commands' flags checked; the rest (NOT_RUN) only syntax-checked, each with its reason.
 * - `json` `yaml` `toml` `ini`: parsed; a problem body against the error catalogue. `dockerfile` `nginx` and
 *   `ini`: the deployment file they show, run by test/deployment/.
 * - `text`: output the page shows (log lines, a transcript), nothing to run.
 * Any other language fails until it is classified here.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import { errorCodes } from '../../src/errors.ts'
import { describeVariables } from '../../src/main/config.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { fencedBlocks, type FencedBlock } from './exchanges.ts'

const ROOT = join(import.meta.dir, '..', '..')
const pages = [...new Bun.Glob('docs/**/*.mdx').scanSync({ cwd: ROOT }), 'README.md'].sort((a, b) =>
  a === 'README.md' ? 1 : b === 'README.md' ? -1 : a.localeCompare(b),
)

interface Sample {
  page: string
  index: number
  block: FencedBlock
  name: string
}
const samples: Sample[] = pages.flatMap((page) =>
  fencedBlocks(readFileSync(join(ROOT, page), 'utf8')).map((block, index) => ({
    page,
    index,
    block,
    name: `${page} #${index} (line ${block.line}, ${block.info || 'no language'}): ${block.text.split('\n')[0]!.slice(0, 80)}`,
  })),
)

const TYPESCRIPT = new Set(['ts', 'typescript', 'js', 'tsx'])
const SHELL = new Set(['bash', 'sh', 'shell', 'console'])

/**
 * Commands a page shows that cannot run here, by program: each is syntax-checked and what the service defines
 * in it (files, admin commands and flags, variables) is checked.
 */
const NOT_RUN: Record<string, string> = {
  docker: 'needs a Docker daemon; the Dockerfile and compose.yaml it names are run by test/deployment/',
  systemctl: 'needs systemd and the installed unit; the unit file is checked by test/deployment/',
  journalctl: 'needs systemd; reads the journal of the installed unit',
  devin: "another product's command line (Devin's), not installed here",
  'dist/server': 'the built executable, as ./dist/server',
  './dist/server': 'the built executable; test/compile.test.ts builds and runs it, here its admin command lines and variables are checked',
  'apt-get': "installs system packages as root from the distribution's registry",
  install: "creates a system directory owned by the service's user, as root",
  pg_isready: "asks the operator's PostgreSQL (DATABASE_URL) whether it answers",
  'redis-cli': "asks the operator's Redis (REDIS_URL) whether it answers",
  pg_dump: "dumps the operator's PostgreSQL (DATABASE_URL), a production host",
  pg_restore: "restores into the operator's PostgreSQL, a production host",
  createdb: "creates a database on the operator's PostgreSQL server",
  sudo: 'runs a command as another user of the host',
  git: "works in the operator's checkout of the service",
  ss: "lists the host's listening sockets; nothing of the service's to check",
  'npm install': 'needs the registry; the packages named must be the project’s own dependencies at the versions given',
  'npm test': 'the whole suite, this test among it',
  'npm run build': 'compiles the executable (a minute); test/compile.test.ts runs the build script',
}

// --- counts, printed at the end -----------------------------------------------------------------------------------
const counts = { run: 0, typechecked: 0, checked: 0, syntaxOnly: 0, sentElsewhere: 0, parsed: 0, output: 0 }

// --- a service and its storage for the commands that run ------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'doc-samples-'))
const model = startFakeOpenAi()
const serviceEnv = {
  HOST: '127.0.0.1',
  PORT: '0',
  OPENAI_API_KEY: 'sk-test',
  OPENAI_BASE_URL: model.baseUrl,
  LOG_LEVEL: 'info',
}
const startArgs = pkg.scripts.start.split(/\s+/).slice(1)
let service: { url: string; process: Subprocess } | undefined
/** The one-time setup code each service logged, by its URL. */
const setupCodes = new Map<string, string>()
const started: Subprocess[] = []

/** `npm start` as its script runs it, in a fresh DATA_DIR with `env`; resolves when it logs `listening`. */
async function startService(env: Record<string, string>) {
  const dataDir = mkdtempSync(join(work, 'data-'))
  const child = Bun.spawn([process.execPath, '--no-env-file', ...startArgs], {
    cwd: ROOT,
    // A command's PORT (3001) would be a fixed port here: port 0, as every service a test starts.
    env: { PATH: process.env.PATH, ...serviceEnv, ...env, HOST: serviceEnv.HOST, PORT: serviceEnv.PORT, DATA_DIR: dataDir },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  started.push(child)
  let url: string | undefined
  const lines: string[] = []
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  const deadline = Date.now() + 20_000
  while (!url && Date.now() < deadline) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    for (;;) {
      const at = buffered.indexOf('\n')
      if (at === -1) break
      const line = buffered.slice(0, at)
      buffered = buffered.slice(at + 1)
      lines.push(line)
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string; setupCode?: string }
        if (entry.msg === 'listening') url = entry.url
        if (entry.setupCode) setupCodes.set(url ?? '', entry.setupCode)
      } catch {}
    }
  }
  if (!url) throw new Error(`the service did not listen: ${lines.join('\n')}\n${await new Response(child.stderr).text()}`)
  // The first-run line comes after `listening`; keep reading in the background.
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      for (const line of decoder.decode(value).split('\n'))
        try {
          const entry = JSON.parse(line) as { setupCode?: string }
          if (entry.setupCode && url) setupCodes.set(url, entry.setupCode)
        } catch {}
    }
  })()
  if (setupCodes.has('')) setupCodes.set(url, setupCodes.get('')!)
  setupCodes.delete('')
  return { url, process: child }
}

async function theService() {
  service ??= await startService({})
  return service
}

afterAll(async () => {
  for (const child of started) child.kill()
  await Promise.all(started.map((child) => child.exited))
  await model.close()
  rmSync(work, { recursive: true, force: true })
  console.log(
    `documentation samples: ${counts.run} commands run, ${counts.typechecked} blocks typechecked, ${counts.checked} commands checked, ` +
      `${counts.syntaxOnly} syntax-checked only, ${counts.sentElsewhere} http blocks sent by examples.test.ts, ${counts.parsed} data blocks parsed, ${counts.output} output blocks`,
  )
})

// --- shell -------------------------------------------------------------------------------------------------------

/** A command's words as the shell splits them (quotes removed), for the commands the pages show. */
function shellWords(command: string): string[] {
  const words: string[] = []
  let word = ''
  let quote: string | undefined
  let inWord = false
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (quote) {
      if (c === quote) quote = undefined
      else if (c === '\\' && quote === '"' && i + 1 < command.length) word += command[++i]
      else word += c
    } else if (c === "'" || c === '"') {
      quote = c
      inWord = true
    } else if (c === '\\' && i + 1 < command.length) {
      word += command[++i]
      inWord = true
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += c
      inWord = true
    }
  }
  if (inWord) words.push(word)
  return words
}

/** A line without its `# comment` (a `#` that starts a word outside quotes). */
function withoutComment(line: string): string {
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote) {
      if (c === quote) quote = undefined
    } else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i)
  }
  return line
}

/** The commands of a block: continuation lines joined, comments dropped, `&&` lists split. */
function shellCommands(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => withoutComment(line).trim())
    .filter((line) => line !== '')
    .flatMap((line) => line.split(/\s+&&\s+/))
}

const declared = new Set(describeVariables().map((v) => v.name))
const composeFile = readFileSync(join(ROOT, 'docs', 'deployment', 'compose.yaml'), 'utf8')
/** A variable the service reads, or one docs/deployment/compose.yaml asks its operator for. */
const knownVariable = (name: string) => declared.has(name) || composeFile.includes(`\${${name}:`)
const dependencies: Record<string, string> = { ...pkg.dependencies, ...pkg.devDependencies }

/** Leading NAME=value words, and the rest. */
function splitAssignments(words: string[]) {
  const env: Record<string, string> = {}
  let i = 0
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i]!); i++) {
    const at = words[i]!.indexOf('=')
    env[words[i]!.slice(0, at)] = words[i]!.slice(at + 1)
  }
  return { env, words: words.slice(i) }
}

// The operator commands, as `npm run admin -- --help` lists them (`orgs create`, `users set-role`...).
const adminHelp = Bun.spawnSync([process.execPath, '--no-env-file', join(ROOT, 'src', 'main', 'cli.ts'), '--help'], { cwd: ROOT }).stdout.toString()
// One word (`backup FILE`) or two (`orgs create`): what follows in capitals is an argument.
const adminCommands = [...adminHelp.matchAll(/^ {2}([a-z]+(?: [a-z-]+)?)(?=\s|$)/gm)].map((m) => m[1]!)

/**
 * Why `args` is not an operator command line, or undefined: its command must be one --help lists, and the CLI
 * must take its flags. The CLI reads the command line before it opens storage, so against storage it cannot reach
 * it exits 78 (configuration) for a line it accepts and 2 for one it does not, having run nothing.
 */
function adminUsageProblem(args: string[]): string | undefined {
  const words = args.filter((arg) => !arg.startsWith('-'))
  const command = adminCommands.includes(words[0] ?? '') ? words[0]! : words.slice(0, 2).join(' ')
  if (!adminCommands.includes(command)) return `"${command}" is not an operator command (${adminCommands.join(', ')})`
  const run = Bun.spawnSync([process.execPath, '--no-env-file', join(ROOT, 'src', 'main', 'cli.ts'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, DATA_DIR: join(work, 'unused'), DATABASE_URL: 'postgres://ops:x@127.0.0.1:1/service' },
  })
  // A restore finds no archive at the page's path first: refused (1) with its reason, the line itself taken.
  const refusedForItsFile = run.exitCode === 1 && /^error: no file /.test(run.stderr.toString())
  return run.exitCode === 78 || refusedForItsFile ? undefined : `the admin command line exits ${run.exitCode}: ${run.stdout}${run.stderr}`
}

/** Outputs earlier admin commands printed, by the placeholder the pages give them. */
const placeholders = new Map<string, string>()
const adminDataDir = join(work, 'admin-data')
// The identity provider configured, as the authentication page's next section has it, so `orgs link` runs.
const adminEnv = { DATA_DIR: adminDataDir, OIDC_ISSUER: 'https://idp.example.com', OIDC_AUDIENCE: 'realtime-ai-backend-api', OIDC_ORG_CLAIM: 'org_id' }

async function runAdmin(args: string[], env: Record<string, string>) {
  const filled = args.map((arg) => {
    const value = placeholders.get(arg)
    if (/^<|>$/.test(arg) && value === undefined) throw new Error(`${arg}: no earlier command of the page printed it`)
    // A host path (a backup file under /var/backups) lands in this test's own directory.
    if (arg.startsWith('/')) {
      const local = join(work, 'host', arg)
      mkdirSync(join(local, '..'), { recursive: true })
      return local
    }
    return value ?? arg
  })
  const script = pkg.scripts.admin.split(/\s+/)
  expect(script[0]).toBe('bun')
  // So does a host path in the command's variables (DATA_DIR=/var/lib/...).
  const localEnv = Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.startsWith('/') ? join(work, 'host', value) : value]))
  const run = Bun.spawn([process.execPath, '--no-env-file', ...script.slice(1), ...filled], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...adminEnv, ...localEnv },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
  if (exitCode !== 0) throw new Error(`npm run admin -- ${filled.join(' ')} exited ${exitCode}:\n${stdout}${stderr}`)
  // `orgs create` prints the new organisation's id, which later commands name as <organization id>.
  if (args[0] === 'orgs' && args[1] === 'create') placeholders.set('<organization id>', stdout.trim())
  counts.run++
}

/** Checks one command that is not run; throws what is wrong. */
function checkCommand(command: string, blockEnv: Record<string, string>) {
  const { env, words } = splitAssignments(shellWords(command))
  const unknown = Object.keys(env).filter((name) => !knownVariable(name))
  if (unknown.length) throw new Error(`${command}: ${unknown.join(', ')} is no variable the service reads`)
  Object.assign(blockEnv, env)
  if (words.length === 0) return void counts.checked++
  const [program = '', sub = '', ...rest] = words
  const adminAt = words.indexOf('admin')
  const admin = adminAt === -1 ? undefined : words.slice(adminAt + 1)
  if (program === 'npm' && sub === 'ci') {
    // Installs exactly package-lock.json: nothing on the line to check.
  } else if (program === 'npm' && (sub === 'install' || sub === 'i')) {
    for (const spec of rest) {
      const [, name = '', version] = /^(@?[^@]+)(?:@(.+))?$/.exec(spec) ?? []
      if (!(name in dependencies)) throw new Error(`${spec}: not a dependency of the project`)
      if (version && dependencies[name] !== version) throw new Error(`${spec}: the project has ${name}@${dependencies[name]}`)
    }
  } else if (program === 'npm') {
    const script = sub === 'run' ? rest[0] : sub
    if (!script || !(script in pkg.scripts)) throw new Error(`${command}: package.json has no script "${script}"`)
  } else if (program === 'npx') {
    if (!(sub in dependencies)) throw new Error(`${command}: ${sub} is not a dependency of the project`)
  } else if (program === 'admin') {
    // `admin ...` as a page shows it after the executable or `npm run admin --`.
    const problem = adminUsageProblem(words.slice(1))
    if (problem) throw new Error(`${command}: ${problem}`)
  } else if (program === './dist/server' || program === 'dist/server') {
    if (admin) {
      const problem = adminUsageProblem(admin)
      if (problem) throw new Error(`${command}: ${problem}`)
    } else if (words.length > 1 && !['--help', '-h', '--version', '-V'].includes(sub)) throw new Error(`${command}: the server takes no arguments`)
  } else if (program === 'export') {
    const names = words.slice(1).map((word) => word.split('=')[0]!)
    const unknownNames = names.filter((name) => !knownVariable(name))
    if (unknownNames.length) throw new Error(`${command}: ${unknownNames.join(', ')} is no variable the service reads`)
  } else if (program in NOT_RUN) {
    const named = [...command.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]!)
    const unknownNamed = named.filter((name) => !knownVariable(name))
    if (unknownNamed.length) throw new Error(`${command}: $${unknownNamed.join(', $')} is no variable the service reads`)
    for (const [i, word] of words.entries())
      if (program === 'docker' && word === '-f' && !existsSync(join(ROOT, words[i + 1]!))) throw new Error(`${command}: no file ${words[i + 1]}`)
    if (admin) {
      const problem = adminUsageProblem(admin)
      if (problem) throw new Error(`${command}: ${problem}`)
    }
    if ((program === 'systemctl' || program === 'journalctl') && !words.some((word) => existsSync(join(ROOT, 'docs', 'deployment', `${word}.service`))))
      throw new Error(`${command}: names no unit of docs/deployment/`)
  } else throw new Error(`${command}: "${program}" is neither run nor checked here; run it, check it, or add it to NOT_RUN with a reason`)
  counts.checked++
}

/** How each command of a block is run or checked; a block with `curl` runs whole, in bash. */
async function shellSample(sample: Sample) {
  // `<organization id>` is a value the reader substitutes, not a redirection.
  const syntax = Bun.spawnSync(['bash', '-n'], { stdin: new TextEncoder().encode(sample.block.text.replace(/<[a-z][\w .-]*>/gi, 'VALUE')) })
  if (syntax.exitCode !== 0) throw new Error(`bash -n: ${syntax.stderr}`)
  const commands = shellCommands(sample.block.text)
  if (commands.some((command) => /(^|\$\()\s*curl\s/.test(command))) return runCurlBlock(sample.block.text)
  const blockEnv: Record<string, string> = {}
  // A block working on the operator's PostgreSQL ($DATABASE_URL, beside pg_dump) has its admin lines checked, not run.
  const onOperatorsDatabase = /\$\{?DATABASE_URL\b/.test(sample.block.text)
  for (const written of commands) {
    const command = [...placeholders].reduce((text, [name, value]) => text.replaceAll(name, value), written)
    const { env, words } = splitAssignments(shellWords(command))
    const key = words.slice(0, 2).join(' ')
    if (words[0] === 'npm' && words[1] === 'start') {
      const unknown = Object.keys(env).filter((name) => !knownVariable(name))
      if (unknown.length) throw new Error(`${command}: ${unknown.join(', ')} is no variable the service reads`)
      const started = await startService(env)
      started.process.kill()
      counts.run++
    } else if (words[0] === 'npm' && words[1] === 'run' && words[2] === 'admin' && words[3] === '--' && onOperatorsDatabase) {
      const problem = adminUsageProblem(words.slice(4))
      if (problem) throw new Error(`${command}: ${problem}`)
      counts.checked++
    } else if (words[0] === 'npm' && words[1] === 'run' && words[2] === 'admin' && words[3] === '--') {
      await runAdmin(words.slice(4), { ...blockEnv, ...env })
    } else if (words[0] === 'npx' && words[1] === 'openapi-typescript') {
      await generateClientTypes(command)
      counts.run++
    } else {
      if (NOT_RUN[key] !== undefined || NOT_RUN[words[0] ?? ''] !== undefined) counts.syntaxOnly++
      checkCommand(command, blockEnv)
    }
  }
}

const generated = new Map<string, Promise<void>>()

/**
 * `npx openapi-typescript <the service's /swagger/json> -o <file>` against the service started here, once per
 * command (before the typecheck, whose sample imports the file as './api').
 */
function generateClientTypes(command: string): Promise<void> {
  let done = generated.get(command)
  if (!done) {
    done = (async () => {
      const { url } = await theService()
      const words = shellWords(command)
      const out = words.indexOf('-o')
      const args = words.slice(2).map((word, i) => (i + 2 === out + 1 ? join(frontDir, word) : word.replace('http://localhost:3000', url)))
      mkdirSync(join(frontDir, 'src'), { recursive: true })
      const run = Bun.spawn(['npx', '--no-install', 'openapi-typescript', ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
      const [stderr, exitCode] = await Promise.all([new Response(run.stderr).text(), run.exited])
      if (exitCode !== 0) throw new Error(`${command}: ${stderr}`)
      // The sample beside the command imports './api': the generated file is where the front end's code is.
      writeFileSync(join(frontDir, 'api.d.ts'), readFileSync(join(frontDir, words[out + 1]!)))
    })()
    generated.set(command, done)
  }
  return done
}

/** The reader who set the service up, as the authentication page does (the organisation as accounts.mdx names it). */
const OWNER = { email: 'owner@example.com', password: 'owner-password-1234', organizationName: 'Acme' }

/**
 * A block with `curl` runs whole, in bash, against a service of its own: one the reader set up (a token in
 * $TOKEN), or a new one when the block sets it up itself. The reader's values stand in for the page's: the
 * service's address, its setup code, the password chosen at setup.
 */
async function runCurlBlock(text: string) {
  const setsUp = /\/setup\b/.test(text)
  const { url } = await startService({})
  // The first-run line, with the setup code, follows `listening`.
  for (let i = 0; i < 100 && !setupCodes.has(url); i++) await Bun.sleep(50)
  const code = setupCodes.get(url)
  let script = text.replaceAll('http://localhost:3000', url).replaceAll('localhost:3000', url).replaceAll('the-password-you-chose', OWNER.password)
  if (code) script = script.replaceAll('7K2M-Q9TD-X4RB-H1VC', code)
  // The reader's shell holds the service's configuration (the model provider's address and key).
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', OPENAI_BASE_URL: serviceEnv.OPENAI_BASE_URL, OPENAI_API_KEY: serviceEnv.OPENAI_API_KEY }
  if (!setsUp) {
    const setup = await fetch(`${url}/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, ...OWNER }) })
    if (!setup.ok) throw new Error(`setting up the service: ${setup.status} ${await setup.text()}`)
    const login = await fetch(`${url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OWNER.email, password: OWNER.password }),
    })
    env.TOKEN = ((await login.json()) as { accessToken: string }).accessToken
  }
  // Not spawnSync: the fake model provider answers from this process.
  const run = Bun.spawn(['bash', '-e', '-o', 'pipefail', '-c', script], { env, cwd: work, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
  if (exitCode !== 0 || stdout.includes('"type":"/docs/errors#') || stdout.trim() === '') throw new Error(`the block exited ${exitCode}:\n${stdout}\n${stderr}`)
  counts.run += shellCommands(text).length
}

// --- TypeScript --------------------------------------------------------------------------------------------------

// A front end's project beside a checkout of the service, as api-clients.mdx has it: `../backend/src/main/app.ts`.
const checkout = join(work, 'projects')
const frontDir = join(checkout, 'front')
const serverSideDir = join(checkout, 'front-eden')
mkdirSync(frontDir, { recursive: true })
mkdirSync(serverSideDir, { recursive: true })
symlinkSync(ROOT, join(checkout, 'backend'))
symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'))

/** Values the samples take as given, as a reader's code would have them. */
const READER = `declare const email: string
declare const password: string
declare const chatId: string
declare const accessToken: string
declare const code: string
declare const error: string
declare function handle(message: unknown): void
`
/** A sample of the service's own code (a plugin's handler) gets what a plugin has. */
const PLUGIN_PRELUDE = `import type { Dependencies } from '../backend/src/main/dependencies.ts'
import { AppError } from '../backend/src/errors.ts'
declare const deps: Dependencies
declare const userId: string
`

const typescriptSamples = samples.filter((s) => TYPESCRIPT.has(s.block.info))
/** Where a sample is typechecked: beside the service's types (no DOM, as api-clients.mdx says) or in a browser project. */
const projectOf = (s: Sample) => (s.block.text.includes('../backend/') || /\bdeps\./.test(s.block.text) ? serverSideDir : frontDir)
const fileOf = (s: Sample) => `${s.page.replace(/[/.]/g, '-')}-${s.index}.${s.block.info === 'tsx' ? 'tsx' : s.block.info === 'js' ? 'js' : 'ts'}`

/** The Eden project's compiler options, from the page that shows them. */
function edenOptions(): Record<string, unknown> {
  const page = readFileSync(join(ROOT, 'docs', 'api-clients.mdx'), 'utf8')
  const block = fencedBlocks(page).find((b) => b.info === 'json' && b.text.includes('compilerOptions'))
  if (!block) throw new Error('docs/api-clients.mdx shows no compiler options for the Eden client')
  return (JSON.parse(block.text) as { compilerOptions: Record<string, unknown> }).compilerOptions
}

const diagnostics = new Map<string, string[]>()

/** One tsc run per project; its diagnostics by file. */
async function typecheckAll() {
  for (const dir of [frontDir, serverSideDir]) {
    const files = typescriptSamples.filter((s) => projectOf(s) === dir)
    if (files.length === 0) continue
    for (const s of files) {
      const prelude = /\bdeps\./.test(s.block.text) && !s.block.text.includes('import') ? PLUGIN_PRELUDE : ''
      writeFileSync(join(dir, fileOf(s)), `${prelude}${s.block.text}\nexport {}\n`)
    }
    writeFileSync(join(dir, 'reader.d.ts'), READER)
    const compilerOptions =
      dir === serverSideDir
        ? { ...edenOptions(), allowJs: true, checkJs: true }
        : {
            target: 'ESNext',
            module: 'ESNext',
            moduleResolution: 'bundler',
            lib: ['ESNext', 'DOM', 'DOM.Iterable'],
            jsx: 'react-jsx',
            strict: true,
            skipLibCheck: true,
            noEmit: true,
            types: [],
            allowJs: true,
            checkJs: true,
          }
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['reader.d.ts', ...files.map(fileOf)] }))
    const run = Bun.spawn([join(ROOT, 'node_modules', '.bin', 'tsc'), '--noEmit', '-p', join(dir, 'tsconfig.json')], {
      cwd: dir,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const output = (await new Response(run.stdout).text()) + (await new Response(run.stderr).text())
    await run.exited
    for (const line of output.split('\n')) {
      const file = /^([^(\s]+)\(\d+,\d+\): error/.exec(line)?.[1]
      if (!file) continue
      const name = basename(file)
      diagnostics.set(name, [...(diagnostics.get(name) ?? []), line])
    }
  }
}

// --- data --------------------------------------------------------------------------------------------------------

/** One JSON document, or one per line (a stream of messages). */
function parseJson(text: string): unknown[] {
  try {
    return [JSON.parse(text)]
  } catch (whole) {
    const lines = text.split('\n').filter((line) => line.trim() !== '')
    if (lines.length < 2) throw whole
    return lines.map((line) => JSON.parse(line))
  }
}

/** A problem body names a code of the error catalogue, with its status. */
function problemBodyProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return []
  const body = value as { type?: unknown; code?: unknown; status?: unknown }
  if (typeof body.type !== 'string' || !body.type.startsWith('/docs/errors#')) return []
  const code = body.type.slice('/docs/errors#'.length)
  const entry = (errorCodes as Record<string, { status: number }>)[code]
  if (!entry) return [`${code} is not in the error catalogue`]
  return [
    ...(body.code === code ? [] : [`code ${String(body.code)} differs from its type ${code}`]),
    ...(body.status === entry.status ? [] : [`status ${String(body.status)}, the catalogue says ${entry.status}`]),
  ]
}

const deploymentFiles = [...new Bun.Glob('*').scanSync({ cwd: join(ROOT, 'docs', 'deployment') })].map((name) =>
  readFileSync(join(ROOT, 'docs', 'deployment', name), 'utf8').trim(),
)

// --- the tests ---------------------------------------------------------------------------------------------------

beforeAll(async () => {
  const commands = samples.filter((s) => SHELL.has(s.block.info)).flatMap((s) => shellCommands(s.block.text))
  await Promise.all(commands.filter((c) => c.startsWith('npx openapi-typescript ')).map(generateClientTypes))
  await typecheckAll()
}, 120_000)

describe('every code block of the documentation and the README', () => {
  test('there are blocks of every kind this file covers', () => {
    expect(pages).toContain('README.md')
    expect(typescriptSamples.length).toBeGreaterThan(3)
    expect(samples.filter((s) => SHELL.has(s.block.info)).length).toBeGreaterThan(5)
  })

  for (const sample of samples) {
    const { info, text } = sample.block
    test(sample.name, async () => {
      if (info === 'http') {
        // examples.test.ts sends the request and compares the documented answer.
        expect(text).toMatch(/^((GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) \/\S*|HTTP\/1\.1 \d{3})/)
        counts.sentElsewhere++
      } else if (TYPESCRIPT.has(info)) {
        expect(diagnostics.get(fileOf(sample)) ?? []).toEqual([])
        counts.typechecked++
      } else if (SHELL.has(info)) {
        await shellSample(sample)
      } else if (info === 'json') {
        const documents = parseJson(text)
        expect(documents.flatMap(problemBodyProblems)).toEqual([])
        counts.parsed++
      } else if (info === 'yaml' || info === 'toml') {
        ;(info === 'yaml' ? Bun.YAML : Bun.TOML).parse(text)
        counts.parsed++
      } else if (info === 'ini' || info === 'dockerfile' || info === 'nginx') {
        // The deployment files as they are; test/deployment/ runs them (docs.test.ts holds the page to them).
        expect(deploymentFiles).toContain(text.trim())
        if (info === 'ini')
          for (const line of text.split('\n')) if (line.trim() && !line.startsWith('#')) expect(line).toMatch(/^(\[[A-Za-z]+\]|[A-Za-z]+=.*)$/)
        counts.parsed++
      } else if (info === 'text') {
        // Output the page shows: log lines, a transcript, an error listing.
        expect(text.trim()).not.toBe('')
        counts.output++
      } else {
        throw new Error(`a "${info || 'no language'}" block: classify it in test/docs/samples.test.ts (run, typecheck, parse or shown output)`)
      }
    }, 120_000)
  }
})
