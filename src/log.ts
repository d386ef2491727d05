/** Structured logger: one JSON object per line, or a readable line in pretty mode. */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  child(fields: LogFields): Logger
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface LoggerOptions {
  /** Lowest level written. Default `info`. */
  level?: LogLevel
  /** `json` (default) or `pretty`. */
  format?: 'json' | 'pretty'
  /** Where lines go; default stdout. Tests pass an array-backed sink. */
  write?: (line: string) => void
}

// Field names whose values never reach a log line, whatever logs them.
const SECRET_KEYS = /^(authorization|password|token|access_?token|refresh_?token|secret|client_?secret|cookie|api_?key)$/i

function redact(fields: LogFields): LogFields {
  const out: LogFields = {}
  for (const [k, v] of Object.entries(fields)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : v
  return out
}

function serialiseError(err: unknown): unknown {
  if (!(err instanceof Error)) return err
  return { name: err.name, message: err.message, stack: err.stack }
}

export function createLogger(options: LoggerOptions = {}, base: LogFields = {}): Logger {
  const min = rank[options.level ?? 'info']
  const format = options.format ?? 'json'
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'))

  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[level] < min) return
    const all = redact({ ...base, ...fields })
    if ('err' in all) all.err = serialiseError(all.err)
    if (format === 'json') {
      write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...all }))
    } else {
      const extras = Object.entries(all)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ')
      write(`${new Date().toISOString().slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${msg}${extras ? ' ' + extras : ''}`)
    }
  }

  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  }
}

/** A logger that keeps lines in memory, for tests. */
export function memoryLogger(level: LogLevel = 'debug'): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({ level, write: (line) => lines.push(JSON.parse(line)) })
  return Object.assign(logger, { lines })
}
