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
const secretKeyVerdicts = new Map<string, boolean>()
const isSecretKey = (key: string) => {
  let secret = secretKeyVerdicts.get(key)
  if (secret === undefined) secretKeyVerdicts.set(key, (secret = SECRET_KEYS.test(key)))
  return secret
}

/**
 * One object for the line: time, level and message first, then the fields with secrets redacted. Without a
 * prototype, so a field named __proto__ (from parsed JSON, say) is written like any other instead of
 * replacing the object's prototype.
 */
function lineObject(time: string, level: LogLevel, msg: string, base: LogFields, fields: LogFields | undefined): LogFields {
  const out: LogFields = Object.create(null)
  out.time = time
  out.level = level
  out.msg = msg
  for (const source of [base, fields])
    if (source) for (const k in source) out[k] = isSecretKey(k) ? '[redacted]' : k === 'err' ? serialiseError(source[k]) : source[k]
  return out
}

// Many lines share a millisecond; formatting the timestamp once per millisecond is enough.
let lastMs = 0
let lastIso = ''
function isoNow(): string {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

function serialiseError(err: unknown): unknown {
  if (!(err instanceof Error)) return err
  return { name: err.name, message: err.message, stack: err.stack }
}

/** Where formatted lines go; the level lets a sink hurry warnings and errors. */
type Sink = (line: string, level: LogLevel) => void

// A line waits at most this long, or until this much is waiting, so a burst of requests shares one system call.
const FLUSH_INTERVAL_MS = 50
const FLUSH_BYTES = 64 * 1024

/**
 * Lines to stdout in batches: 50 ms after the first waiting line, once 64 KiB wait, at once for a warning or an
 * error (after everything before it), and at exit. Bun's sink writes each call straight through, one write(2)
 * per line, so the batch is gathered here.
 */
let stdoutSink: Sink | undefined

function stdoutLines(): Sink {
  return (stdoutSink ??= batchedStdout())
}

function batchedStdout(): Sink {
  const sink = Bun.stdout.writer()
  let waiting = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    clearTimeout(timer)
    timer = undefined
    if (!waiting) return
    sink.write(waiting)
    waiting = ''
    sink.flush()
  }
  process.once('exit', flush)
  return (line, level) => {
    waiting += `${line}\n`
    if (rank[level] >= rank.warn || waiting.length >= FLUSH_BYTES) flush()
    else if (timer === undefined) {
      timer = setTimeout(flush, FLUSH_INTERVAL_MS)
      // Never what keeps a process alive: exit flushes whatever waits.
      timer.unref()
    }
  }
}

export function createLogger(options: LoggerOptions = {}, base: LogFields = {}): Logger {
  const min = rank[options.level ?? 'info']
  const format = options.format ?? 'json'
  const write: Sink = options.write ?? stdoutLines()

  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[level] < min) return
    const line = lineObject(isoNow(), level, msg, base, fields)
    if (format === 'json') {
      write(JSON.stringify(line), level)
    } else {
      const { time, level: _level, msg: _msg, ...all } = line
      const extras = Object.entries(all)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ')
      write(`${new Date().toISOString().slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${msg}${extras ? ` ${extras}` : ''}`, level)
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
