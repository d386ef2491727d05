/**
 * The executable's own command line (`server`, `server --help`, `server --version`, `server admin ...`) and the
 * exit codes it shares with the operator commands. Nothing here reads the environment: flags only choose what
 * runs; every setting is an environment variable (src/config.ts).
 */
import { basename } from 'node:path'
import pkg from '../package.json' with { type: 'json' }
import { ConfigError } from './config.ts'
import { UnreachableError } from './reachability.ts'
import { MigrationError } from './storage/migrate.ts'

export const EXIT = {
  ok: 0,
  /** The command ran and refused or found a fault (audit verify found a break; a backup or restore was refused). */
  failed: 1,
  /** A command line the program does not understand. */
  usage: 2,
  /** EX_CONFIG: the configuration is wrong, or names a server that cannot be used; restarting will not help. */
  config: 78,
} as const

export const VERSION_TEXT = `${pkg.name} ${pkg.version} (Bun ${Bun.version})`

/**
 * How the program is started, for usage lines: the executable's name, or from source the start script's command
 * (`bun --max-http-header-size=65536 src/main/index.ts`). The flag is Bun's own limit on a request head, checked
 * by its parser before the service sees the request: without it a head over Bun's default 16 KiB gets a bare 431
 * with no body instead of the service's problem answer. The executable carries it from the build.
 */
export function programName(): string {
  return Bun.main.startsWith('/$bunfs/') ? basename(process.execPath) : pkg.scripts.start
}

export function serverUsage(program = programName()): string {
  return `${VERSION_TEXT}: the backend of the real-time AI development platform (HTTP, server-sent events, WebSocket).

Usage:
  ${program}                      start the service
  ${program} admin COMMAND ...    run an operator command on the configured storage (admin --help lists them)
  ${program} --help | -h          show this text
  ${program} --version | -V       show the version

Settings are environment variables (a .env file in the working directory is read too); there are no other flags.
The main ones, with their defaults:
  PORT, HOST                      where it listens (3000, 0.0.0.0)
  DATA_DIR                        the SQLite database, generated secrets and indexes (./data)
  DATABASE_URL                    PostgreSQL instead of SQLite
  REDIS_URL                       rate limits, chat streams and agent tasks shared by several processes
  PUBLIC_BASE_URL                 the URL clients reach the service at (http://localhost:PORT)
  OPENAI_API_KEY, OPENAI_BASE_URL the model provider
  METRICS_TOKEN, METRICS_PORT     GET /metrics (Prometheus); OTEL_EXPORTER_OTLP_ENDPOINT for traces
Every variable, with its default and meaning: docs/configuration.mdx, also served at /docs/configuration.

Exit codes: 0 stopped cleanly (SIGTERM, SIGINT); 2 command line not understood; 78 configuration invalid,
or PostgreSQL or Redis could not be reached (the message names the variable and host:port).`
}

export type ServerCommand = { run: 'serve' } | { run: 'help' } | { run: 'version' } | { run: 'admin'; args: string[] } | { run: 'usage-error'; message: string }

/** What the arguments after the program ask for; `variables` are the names of every setting, for hints. */
export function parseServerArgs(args: readonly string[], variables: readonly string[]): ServerCommand {
  const [first, ...rest] = args
  if (first === undefined) return { run: 'serve' }
  if (first === 'admin') return { run: 'admin', args: rest }
  if (first === '--help' || first === '-h' || first === 'help') return { run: 'help' }
  if (first === '--version' || first === '-V' || first === 'version') return { run: 'version' }
  if (first.startsWith('-')) {
    // --port=8080 and the like: point at the variable that does it.
    const variable = first.replace(/^-+/, '').split('=')[0]!.toUpperCase().replaceAll('-', '_')
    const known = variables.includes(variable)
    return { run: 'usage-error', message: `unknown option ${first}${known ? `; settings are environment variables: set ${variable} instead` : ''}` }
  }
  return { run: 'usage-error', message: `unknown command "${first}"` }
}

/** The message of a start-up failure that is the configuration's fault (exit 78), or undefined for any other. */
export function configurationFailure(error: unknown): string | undefined {
  if (error instanceof ConfigError || error instanceof UnreachableError || error instanceof MigrationError) return error.message
  return undefined
}
