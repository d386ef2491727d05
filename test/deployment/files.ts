/**
 * The deployment files under docs/deployment/, read the way Docker, Compose, nginx and systemd read them
 * (as far as the tests need), and nginx's configuration rendered to run here on 127.0.0.1.
 */
import type { Subprocess } from 'bun'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeVariables } from '../../src/main/config.ts'
import { tempDir } from '../helpers.ts'

export const ROOT = join(import.meta.dir, '..', '..')
export const DEPLOYMENT_DIR = join(ROOT, 'docs', 'deployment')
export const DEPLOYMENT_FILES = ['Dockerfile', 'compose.yaml', 'nginx.conf', 'realtime-ai-backend.service'] as const

export const readDeploymentFile = (name: (typeof DEPLOYMENT_FILES)[number]) => readFileSync(join(DEPLOYMENT_DIR, name), 'utf8')

/** The service's variables and their defaults, from the settings declarations. */
export const serviceVariables = new Map(describeVariables().map((v) => [v.name, v.fallback]))

/** A default as a number (BODY_LIMIT_BYTES, SHUTDOWN_TIMEOUT_MS...). */
export const numericDefault = (name: string) => Number(JSON.parse(serviceVariables.get(name)!))

// --- Dockerfile -------------------------------------------------------------------------------------

export interface DockerStage {
  from: string
  name: string | undefined
  /** Instructions in order, keyword upper-cased, continuation lines joined. */
  instructions: { keyword: string; args: string }[]
}

export function dockerStages(text: string): DockerStage[] {
  const logical = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  const stages: DockerStage[] = []
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line)!
    const upper = keyword.toUpperCase()
    if (upper === 'FROM') {
      const [, from = '', name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? []
      stages.push({ from, name, instructions: [] })
    } else stages.at(-1)!.instructions.push({ keyword: upper, args })
  }
  return stages
}

/** `ENV A=1 B=2` pairs of a stage (the only ENV form the Dockerfile uses). */
export function dockerEnv(stage: DockerStage): Record<string, string> {
  const env: Record<string, string> = {}
  for (const { keyword, args } of stage.instructions)
    if (keyword === 'ENV') for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)) env[name!] = value!
  return env
}

export const dockerArgs = (stage: DockerStage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args)

// --- compose.yaml -----------------------------------------------------------------------------------

/**
 * Compose's variable interpolation: `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`,
 * `${NAME?error}` and `$$`. A missing required variable throws with Compose's message.
 */
export function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (whole, name?: string, colon?: string, op?: string, arg?: string) => {
    if (whole === '$$') return '$'
    const given = env[name!]
    const missing = given === undefined || (colon === ':' && given === '')
    if (!missing) return given!
    if (op === '?') throw new Error(`required variable ${name} is missing a value: ${arg}`)
    return op === '-' ? arg! : ''
  })
}

function interpolateAll(node: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof node === 'string') return interpolate(node, env)
  if (Array.isArray(node)) return node.map((item) => interpolateAll(item, env))
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateAll(v, env)]))
  return node
}

export interface ComposeService {
  image?: string
  build?: { context: string; dockerfile: string }
  init?: boolean
  environment?: Record<string, string | number>
  volumes?: string[]
  ports?: string[]
  depends_on?: Record<string, { condition: string }>
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string }
  stop_grace_period?: string
  networks?: string[] | Record<string, { ipv4_address?: string } | null>
  restart?: string
}

export interface ComposeFile {
  name?: string
  services: Record<string, ComposeService>
  networks?: Record<string, { ipam?: { config?: { subnet: string }[] } }>
  volumes?: Record<string, unknown>
}

/** What an operator sets before `docker compose up` (compose.yaml requires these). */
export const OPERATOR_ENV = {
  POSTGRES_PASSWORD: 'compose-postgres-password',
  JWT_SECRET: 'compose-jwt-secret-of-at-least-32-characters',
  TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
}

/** compose.yaml parsed (Bun's YAML parser, merge keys included) and interpolated with `env`. */
export function composeFile(env: Record<string, string | undefined> = OPERATOR_ENV): ComposeFile {
  return interpolateAll(Bun.YAML.parse(readDeploymentFile('compose.yaml')), env) as ComposeFile
}

/** The services built from docs/deployment/Dockerfile: the replicas. */
export const replicas = (compose: ComposeFile) => Object.entries(compose.services).filter(([, s]) => s.build?.dockerfile === 'docs/deployment/Dockerfile')

/** Compose's duration format (`1m30s`, `30s`, `500ms`) in milliseconds. */
export function durationMs(text: string): number {
  let total = 0
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 }
  const rest = text.replace(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g, (_, n: string, unit: string) => {
    total += Number(n) * units[unit]!
    return ''
  })
  if (rest !== '' || text === '') throw new Error(`not a duration: "${text}"`)
  return total
}

/** Stringified environment of a compose service. */
export const environmentOf = (service: ComposeService): Record<string, string> =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, String(v)]))

// --- realtime-ai-backend.service --------------------------------------------------------------------

/** `Key=value` settings of each section, in order; a key may repeat (Environment=). */
export function unitSettings(text: string): Map<string, [key: string, value: string][]> {
  const sections = new Map<string, [string, string][]>()
  let current: [string, string][] | undefined
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const section = /^\[(.+)\]$/.exec(line)
    if (section) sections.set(section[1]!, (current = []))
    else {
      const at = line.indexOf('=')
      current!.push([line.slice(0, at).trim(), line.slice(at + 1).trim()])
    }
  }
  return sections
}

/** Assignments of the unit's Environment= lines (several per line allowed; no quoting is used). */
export function unitEnvironment(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of unitSettings(text).get('Service') ?? [])
    if (key === 'Environment') for (const pair of value.split(/\s+/)) env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1)
  return env
}

/** systemd's time span (`30s`, `2min`, `1h`, a bare number of seconds) in milliseconds. */
export function timeSpanMs(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, sec: 1000, min: 60_000, m: 60_000, h: 3_600_000 }
  let total = 0
  for (const [, n, unit = 's'] of text.matchAll(/(\d+)\s*([a-z]*)/g)) total += Number(n) * (units[unit] ?? NaN)
  return total
}

// --- nginx.conf -------------------------------------------------------------------------------------

export const nginxBinary = Bun.which('nginx') ?? ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p))

/** Temp-path directives for the http modules this nginx has, all under `dir`, so it runs as any user. */
function tempPaths(dir: string): string[] {
  const built = Bun.spawnSync([nginxBinary!, '-V']).stderr.toString()
  const modules = ['client_body', 'proxy', ...['fastcgi', 'uwsgi', 'scgi'].filter((m) => !built.includes(`--without-http_${m}_module`))]
  return modules.map((m) => `${m}_temp_path ${join(dir, `${m}_temp`)};`)
}

export interface RenderedNginx {
  dir: string
  conf: string
  /** The nginx arguments that keep pid, error log and prefix in `dir`. */
  args: (...extra: string[]) => string[]
  remove(): void
}

/**
 * nginx.conf with the replicas' addresses and the listen address replaced, temp paths and the access
 * log in a temp directory, and any `extraHttp` directives added to the http block.
 */
export function renderNginx(options: { upstreams: string[]; listen: string; extraHttp?: string[]; edit?: (conf: string) => string }): RenderedNginx {
  const dir = tempDir('svc-nginx-')
  // Workers of an nginx started as root run as an unprivileged user and must reach the temp paths.
  chmodSync(dir.path, 0o755)
  mkdirSync(join(dir.path, 'logs'))
  let servers = 0
  let conf = readDeploymentFile('nginx.conf').replace(/server\s+service-\d+:\d+/g, () => {
    const address = options.upstreams[servers++]
    if (!address) throw new Error(`nginx.conf has more upstream servers than the ${options.upstreams.length} given`)
    return `server ${address}`
  })
  if (servers !== options.upstreams.length) throw new Error(`nginx.conf has ${servers} upstream servers, ${options.upstreams.length} given`)
  conf = conf.replace(/^(\s*)listen\s+\d+;/m, `$1listen ${options.listen};`)
  const httpDirectives = [
    ...tempPaths(dir.path),
    `log_format upstreams '$request_method $uri $status upstream=$upstream_status';`,
    `access_log ${join(dir.path, 'logs', 'access.log')} upstreams;`,
    ...(options.extraHttp ?? []),
  ]
  conf = conf.replace(/^http \{$/m, ['http {', ...httpDirectives.map((d) => `    ${d}`)].join('\n'))
  if (options.edit) conf = options.edit(conf)
  const file = join(dir.path, 'nginx.conf')
  writeFileSync(file, conf)
  return {
    dir: dir.path,
    conf: file,
    args: (...extra) => [nginxBinary!, '-p', dir.path, '-c', file, '-e', join(dir.path, 'logs', 'error.log'), ...extra],
    remove: dir.remove,
  }
}

/** `nginx -t` on a rendered configuration: its exit status and what it printed. */
export function nginxTest(rendered: RenderedNginx): { exitCode: number; output: string } {
  const result = Bun.spawnSync(rendered.args('-t', '-g', `pid ${join(rendered.dir, 'nginx.pid')};`))
  return { exitCode: result.exitCode, output: result.stdout.toString() + result.stderr.toString() }
}

export interface RunningNginx {
  readonly url: string
  readonly port: number
  /** nginx's error log so far (upstream failures, retries on the next server). */
  errorLog(): string
  /** nginx's access log so far: `METHOD URI STATUS upstream=<each upstream's status, comma-separated>` a line. */
  accessLog(): string
  stop(): Promise<void>
}

/** A free port on 127.0.0.1, for a server that cannot be told to pick one itself. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/** Starts nginx in the foreground on a rendered configuration and waits until it answers. */
export async function startNginx(options: { upstreams: string[]; extraHttp?: string[] }): Promise<RunningNginx> {
  const port = freePort()
  const rendered = renderNginx({ upstreams: options.upstreams, listen: `127.0.0.1:${port}`, extraHttp: options.extraHttp })
  const proc: Subprocess = Bun.spawn(rendered.args('-g', `daemon off; pid ${join(rendered.dir, 'nginx.pid')};`), {
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const stderr = new Response(proc.stderr as ReadableStream).text()
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode}: ${await stderr}`)
    const answered = await fetch(`${url}/health`).then(
      () => true,
      () => false,
    )
    if (answered) break
    if (attempt === 100) throw new Error(`nginx did not answer on ${url}`)
    await Bun.sleep(50)
  }
  return {
    url,
    port,
    errorLog: () => readFileSync(join(rendered.dir, 'logs', 'error.log'), 'utf8'),
    accessLog: () => readFileSync(join(rendered.dir, 'logs', 'access.log'), 'utf8'),
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      rendered.remove()
    },
  }
}
