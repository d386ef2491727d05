/**
 * Server-sent events: the wire encoder and the streaming `Response` every SSE route returns.
 * Framing follows the WHATWG EventSource parsing rules, so any conforming client reads it.
 */

export type SseEvent = { id?: string; event?: string; data: string; retry?: number }

export type SseCloseReason = 'done' | 'client_disconnected' | 'error' | 'drained'

export interface SseOptions {
  /**
   * A `: ping` comment is written after this long without output. Default 5000: it only keeps the
   * connection open while it stays below the server's idle timeout (Bun.serve's default is 10 s).
   */
  heartbeatMs?: number
  /** Aborting ends the stream (server-side stop, shutdown). */
  signal?: AbortSignal
  /** Called exactly once when the stream ends; `error` is what the source threw. */
  onClose?: (reason: SseCloseReason, error?: unknown) => void
  /** Reconnection delay sent to the client before the first event. */
  retryMs?: number
  /** Extra response headers; they override the defaults. */
  headers?: Record<string, string>
  /**
   * For streams another process can serve: when `signal` aborts (shutdown), the stream ends with a
   * `retry:` field and a comment, so the client reconnects at once (through the load balancer, to a
   * process that is not stopping) and resumes with Last-Event-ID.
   */
  drain?: { signal: AbortSignal; retryMs: number }
}

// CRLF, CR and LF are all line terminators to an EventSource parser.
const LINE_BREAK = /\r\n|\r|\n/g
// A field value with one of these would end the line early or be dropped by clients.
const FRAMING = /[\r\n\0]/

const PING = ': ping\n'

// Streams of this process that started and have not ended, for the metrics.
let openStreams = 0

/** Server-sent event streams open in this process now. */
export function openSseStreams(): number {
  return openStreams
}

function singleLine(field: 'id' | 'event', value: string): string {
  if (FRAMING.test(value)) throw new TypeError(`SSE ${field} must not contain CR, LF or NUL`)
  return value
}

function retryField(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new TypeError('SSE retry must be a non-negative integer')
  return `retry: ${ms}\n`
}

/** The wire text of one event, blank line included. */
export function formatSseEvent(e: SseEvent): string {
  let frame = ''
  if (e.id !== undefined) frame += `id: ${singleLine('id', e.id)}\n`
  if (e.event !== undefined) frame += `event: ${singleLine('event', e.event)}\n`
  if (e.retry !== undefined) frame += retryField(e.retry)
  return `${frame}data: ${e.data.replace(LINE_BREAK, '\ndata: ')}\n\n`
}

/** Comment lines, ignored by clients; a multi-line text becomes several comments. */
export function formatSseComment(text: string): string {
  return `: ${text.replace(LINE_BREAK, '\n: ')}\n`
}

/**
 * Streams `source` as `text/event-stream`. Strings from the source are written as-is (pre-formatted
 * frames). A client disconnect calls the source iterator's `return()`; a generator runs its `finally`
 * at its next `yield`, so one that waits on something slow should also listen to the request's signal.
 * An error from the source ends the response normally after `onClose('error', error)`: a route that
 * wants the client to know catches it and yields its own error event first.
 */
export function sseResponse(source: AsyncIterable<SseEvent | string>, options: SseOptions = {}): Response {
  const heartbeatMs = options.heartbeatMs ?? 5_000
  const { signal, onClose } = options
  let iterator: AsyncIterator<SseEvent | string> | undefined
  let controller: ReadableStreamDirectController | undefined
  let closed = false
  let counted = false
  let lastWrite = 0
  let heartbeat: ReturnType<typeof setTimeout> | undefined

  const finish = (reason: SseCloseReason, error?: unknown): boolean => {
    if (closed) return false
    closed = true
    if (counted) openStreams--
    clearTimeout(heartbeat)
    signal?.removeEventListener('abort', onAbort)
    options.drain?.signal.removeEventListener('abort', onDrain)
    onClose?.(reason, error)
    return true
  }

  // Cleanup failures after the client left have nowhere to be answered; onClose has already fired.
  const releaseSource = () => void iterator?.return?.()?.catch(() => {})

  const stop = (reason: SseCloseReason) => {
    if (!finish(reason)) return
    releaseSource()
    controller?.close()
  }

  // Bun aborts req.signal just before it cancels the body; waiting one microtask lets a caller that
  // passed req.signal still see 'client_disconnected' rather than 'done'.
  const onAbort = () => queueMicrotask(() => stop('done'))

  const onDrain = () => {
    if (closed || !controller) return
    write(`${retryField(options.drain!.retryMs) + formatSseComment('server shutting down; reconnect with Last-Event-ID')}\n`)
    stop('drained')
  }

  // Bun's sink copies the string into its own buffer and coalesces writes made in the same tick,
  // so there is no per-event Uint8Array and a burst of tokens leaves in one packet.
  const write = (chunk: string): number | Promise<number> => {
    lastWrite = performance.now()
    const written = controller!.write(chunk)
    if (written === 0) stop('client_disconnected')
    return written
  }

  // One timer, re-armed for the remaining idle time, instead of one per event.
  const beat = () => {
    if (closed) return
    const idle = performance.now() - lastWrite
    if (idle >= heartbeatMs) void write(PING)
    if (!closed) heartbeat = setTimeout(beat, idle >= heartbeatMs ? heartbeatMs : heartbeatMs - idle)
  }

  const body = new ReadableStream({
    type: 'direct',
    async pull(c) {
      // A reader may call pull again; the first call runs the whole stream.
      if (controller) return
      controller = c
      if (signal?.aborted) return stop('done')
      counted = true
      openStreams++
      signal?.addEventListener('abort', onAbort)
      options.drain?.signal.addEventListener('abort', onDrain)
      iterator = source[Symbol.asyncIterator]()
      try {
        // Bun sends the status and headers only with the first bytes; clients should not wait for the first token.
        write(options.retryMs === undefined ? formatSseComment('open') : `${retryField(options.retryMs)}\n`)
        heartbeat = setTimeout(beat, heartbeatMs)
        if (options.drain?.signal.aborted) return onDrain()
        while (!closed) {
          const step = await iterator.next()
          if (closed) return
          if (step.done) break
          const chunk = typeof step.value === 'string' ? step.value : formatSseEvent(step.value)
          if (chunk.length === 0) continue
          const written = write(chunk)
          if (typeof written !== 'number') await written
        }
        if (finish('done')) c.close()
      } catch (error) {
        // A formatting error leaves the generator suspended at its yield; let it clean up.
        if (finish('error', error)) releaseSource()
        // Ended cleanly: close(error) would reset the connection but drops whatever Bun has not sent
        // yet, events already written included. Routes tell the client about failures in-band.
        c.close()
      }
    },
    cancel() {
      stop('client_disconnected')
    },
  })

  const headers = new Headers({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
  })
  for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value)
  return new Response(body, { headers })
}
