import { afterEach, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { formatSseComment, formatSseEvent, sseResponse, type SseCloseReason, type SseEvent } from '../src/sse.ts'

let server: Server<unknown> | undefined
afterEach(() => server?.stop(true))

/** Serves one streaming route on 127.0.0.1 and a random port; returns its URL. */
function serve(handle: (request: Request) => Response): string {
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: handle })
  return `http://127.0.0.1:${server.port}/`
}

async function readAll(response: Response) {
  const events: EventSourceMessage[] = []
  const comments: string[] = []
  const retries: number[] = []
  const stream = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream({ onComment: (c) => comments.push(c), onRetry: (r) => retries.push(r) }))
  for await (const event of stream) events.push(event)
  return { events, comments, retries }
}

function closeRecorder() {
  const reasons: SseCloseReason[] = []
  const errors: unknown[] = []
  const { promise, resolve } = Promise.withResolvers<SseCloseReason>()
  return {
    reasons,
    errors,
    closed: promise,
    onClose(reason: SseCloseReason, error?: unknown) {
      reasons.push(reason)
      if (error !== undefined) errors.push(error)
      resolve(reason)
    },
  }
}

describe('formatSseEvent', () => {
  test('writes id, event, retry and one data line per source line', () => {
    expect(formatSseEvent({ id: '7', event: 'token', retry: 2000, data: 'a\r\nb\rc\nd' })).toBe(
      'id: 7\nevent: token\nretry: 2000\ndata: a\ndata: b\ndata: c\ndata: d\n\n',
    )
    expect(formatSseEvent({ data: '' })).toBe('data: \n\n')
  })

  test('data with every kind of line break survives a conforming parser', () => {
    const seen: EventSourceMessage[] = []
    const parser = createParser({ onEvent: (e) => seen.push(e) })
    parser.feed(formatSseEvent({ id: 'x', event: 'multi', data: 'one\r\ntwo\rthree\n\n five' }))
    expect(seen).toEqual([{ id: 'x', event: 'multi', data: 'one\ntwo\nthree\n\n five' }])
  })

  test.each([
    ['id', { id: '1\r\nevent: admin', data: 'x' }],
    ['id', { id: '1\n', data: 'x' }],
    ['id', { id: 'a\0b', data: 'x' }],
    ['event', { event: 'token\rdata: injected', data: 'x' }],
    ['event', { event: 'token\n\ndata: injected', data: 'x' }],
  ] as const)('refuses a line break or NUL in %s', (field, event: SseEvent) => {
    expect(() => formatSseEvent(event)).toThrow(TypeError)
    expect(() => formatSseEvent(event)).toThrow(new RegExp(`SSE ${field} `))
  })

  test('refuses a retry that is not a non-negative integer', () => {
    expect(() => formatSseEvent({ data: 'x', retry: -1 })).toThrow(TypeError)
    expect(() => formatSseEvent({ data: 'x', retry: 1.5 })).toThrow(TypeError)
  })

  test('comments stay comments whatever line breaks they contain', () => {
    expect(formatSseComment('a\r\nb\rc')).toBe(': a\n: b\n: c\n')
    const seen: string[] = []
    const events: EventSourceMessage[] = []
    const parser = createParser({ onComment: (c) => seen.push(c), onEvent: (e) => events.push(e) })
    parser.feed(formatSseComment('hello\ndata: injected\n\n'))
    parser.feed('\n')
    expect(events).toEqual([])
    expect(seen).toEqual(['hello', 'data: injected', '', ''])
  })
})

describe('sseResponse over HTTP', () => {
  test('sends events in order with ids, names and multi-line data, and pre-formatted frames as-is', async () => {
    const close = closeRecorder()
    const url = serve(() =>
      sseResponse(
        (async function* () {
          yield { id: '1', event: 'start', data: '{"model":"m"}' }
          yield { id: '2', event: 'token', data: 'line one\nline two\r\nline three' }
          yield 'event: raw\ndata: pre-formatted\n\n'
          yield { id: '3', data: 'last' }
        })(),
        { retryMs: 3000, onClose: close.onClose, headers: { 'x-request-id': 'req-1' } },
      ),
    )
    const response = await fetch(url)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('no-cache, no-transform')
    expect(response.headers.get('x-accel-buffering')).toBe('no')
    expect(response.headers.get('x-request-id')).toBe('req-1')

    const { events, retries } = await readAll(response)
    expect(retries).toEqual([3000])
    expect(events).toEqual([
      { id: '1', event: 'start', data: '{"model":"m"}' },
      { id: '2', event: 'token', data: 'line one\nline two\nline three' },
      { id: undefined, event: 'raw', data: 'pre-formatted' },
      { id: '3', event: undefined, data: 'last' },
    ])
    expect(await close.closed).toBe('done')
    expect(close.reasons).toEqual(['done'])
  })

  test('the response starts before the source yields anything', async () => {
    const { promise: release, resolve } = Promise.withResolvers<void>()
    const url = serve(() =>
      sseResponse(
        (async function* () {
          await release
          yield { data: 'late' }
        })(),
      ),
    )
    const response = await fetch(url)
    expect(response.status).toBe(200)
    resolve()
    expect((await readAll(response)).events.map((e) => e.data)).toEqual(['late'])
  })

  test('writes a ping comment while the source is idle', async () => {
    const url = serve(() =>
      sseResponse(
        (async function* () {
          yield { data: 'before' }
          await Bun.sleep(300)
          yield { data: 'after' }
        })(),
        { heartbeatMs: 50 },
      ),
    )
    const raw = await (await fetch(url)).text()
    expect(raw).toContain(': ping\n')
    const events: EventSourceMessage[] = []
    createParser({ onEvent: (e) => events.push(e) }).feed(raw)
    expect(events.map((e) => e.data)).toEqual(['before', 'after'])
  })

  test('a client disconnect is seen by the server: onClose once and the generator finally runs', async () => {
    const close = closeRecorder()
    const cleanedUp = Promise.withResolvers<void>()
    let produced = 0
    const url = serve(() =>
      sseResponse(
        (async function* () {
          try {
            for (;;) {
              yield { id: String(++produced), data: 'token' }
              await Bun.sleep(5)
            }
          } finally {
            cleanedUp.resolve()
          }
        })(),
        { onClose: close.onClose },
      ),
    )
    const client = new AbortController()
    const response = await fetch(url, { signal: client.signal })
    const received: EventSourceMessage[] = []
    const parser = createParser({ onEvent: (e) => received.push(e) })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    while (received.length < 3) parser.feed((await reader.read()).value ?? '')
    client.abort()

    expect(await close.closed).toBe('client_disconnected')
    await cleanedUp.promise
    expect(close.reasons).toEqual(['client_disconnected'])
    expect(received.slice(0, 3).map((e) => e.id)).toEqual(['1', '2', '3'])
  })

  test('a disconnect while the source waits is reported as such when the route passed req.signal', async () => {
    const close = closeRecorder()
    const cleanedUp = Promise.withResolvers<void>()
    const url = serve((request) =>
      sseResponse(
        (async function* () {
          try {
            yield { data: 'first' }
            // Waits for something that never comes, except the client leaving.
            await new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)))
          } finally {
            cleanedUp.resolve()
          }
        })(),
        { signal: request.signal, onClose: close.onClose },
      ),
    )
    const client = new AbortController()
    const response = await fetch(url, { signal: client.signal })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    while (!text.includes('data: first')) text += (await reader.read()).value ?? ''
    client.abort()

    expect(await close.closed).toBe('client_disconnected')
    await cleanedUp.promise
    expect(close.reasons).toEqual(['client_disconnected'])
  })

  test('draining ends the stream with a retry hint and a comment, releases the source, and reports onClose("drained")', async () => {
    const close = closeRecorder()
    const cleanedUp = Promise.withResolvers<void>()
    const drain = new AbortController()
    const url = serve(() =>
      sseResponse(
        (async function* () {
          try {
            for (let i = 1; ; i++) {
              yield { id: String(i), data: 'token' }
              await Bun.sleep(5)
            }
          } finally {
            cleanedUp.resolve()
          }
        })(),
        { onClose: close.onClose, drain: { signal: drain.signal, retryMs: 750 } },
      ),
    )
    const response = await fetch(url)
    setTimeout(() => drain.abort(), 40)
    const { events, comments, retries } = await readAll(response)
    expect(events.length).toBeGreaterThan(0)
    expect(retries).toEqual([750])
    expect(comments.at(-1)).toContain('reconnect with Last-Event-ID')
    expect(await close.closed).toBe('drained')
    await cleanedUp.promise

    // A stream opened once draining has begun ends at once, with the same hint.
    const late = await readAll(await fetch(url))
    expect(late.events).toEqual([])
    expect(late.retries).toEqual([750])
  })

  test('an error thrown by the source ends the stream and reports onClose("error")', async () => {
    const close = closeRecorder()
    const failure = new Error('provider went away')
    const url = serve(() =>
      sseResponse(
        (async function* () {
          yield { data: 'partial' }
          throw failure
        })(),
        { onClose: close.onClose },
      ),
    )
    const text = await (await fetch(url)).text()
    expect(await close.closed).toBe('error')
    expect(close.reasons).toEqual(['error'])
    expect(close.errors).toEqual([failure])
    const received: string[] = []
    createParser({ onEvent: (e) => received.push(e.data) }).feed(text)
    expect(received).toEqual(['partial'])
  })

  test('an event that cannot be framed ends the stream as an error and releases the generator', async () => {
    const close = closeRecorder()
    const cleanedUp = Promise.withResolvers<void>()
    const url = serve(() =>
      sseResponse(
        (async function* () {
          try {
            yield { data: 'ok' }
            yield { event: 'evil\nevent: admin', data: 'x' }
            yield { data: 'never sent' }
          } finally {
            cleanedUp.resolve()
          }
        })(),
        { onClose: close.onClose },
      ),
    )
    const text = await (await fetch(url)).text()
    expect(text).toContain('data: ok\n\n')
    expect(text).not.toContain('admin')
    expect(await close.closed).toBe('error')
    expect(close.errors[0]).toBeInstanceOf(TypeError)
    await cleanedUp.promise
  })

  test('aborting the signal ends the stream cleanly and releases the generator', async () => {
    const close = closeRecorder()
    const cleanedUp = Promise.withResolvers<void>()
    const stop = new AbortController()
    const url = serve(() =>
      sseResponse(
        (async function* () {
          try {
            for (let i = 1; ; i++) {
              yield { id: String(i), data: 'tick' }
              if (i === 2) stop.abort()
              await Bun.sleep(5)
            }
          } finally {
            cleanedUp.resolve()
          }
        })(),
        { signal: stop.signal, onClose: close.onClose },
      ),
    )
    const { events } = await readAll(await fetch(url))
    expect(events.map((e) => e.id)).toEqual(['1', '2'])
    expect(await close.closed).toBe('done')
    await cleanedUp.promise
    expect(close.reasons).toEqual(['done'])
  })

  test('can be read in-process, without a server', async () => {
    const response = sseResponse(
      (async function* () {
        for (let i = 0; i < 1000; i++) yield { id: String(i), data: `token ${i}` }
      })(),
    )
    const { events } = await readAll(response)
    expect(events).toHaveLength(1000)
    expect(events[999]).toEqual({ id: '999', event: undefined, data: 'token 999' })
  })
})
