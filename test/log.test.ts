import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createLogger, type LogFields } from '../src/log.ts'

/** A JSON logger whose lines are kept as written. */
function capture(base?: LogFields) {
  const lines: string[] = []
  const root = createLogger({ level: 'debug', write: (line) => lines.push(line) })
  return { logger: base ? root.child(base) : root, lines }
}

/**
 * The line JSON.stringify writes for the same call: time, level and msg first, then base and fields, secrets
 * redacted, a later field taking an earlier one's place.
 */
function expected(line: string, level: string, msg: string, base: LogFields, fields: LogFields): string {
  const out: LogFields = Object.create(null)
  Object.assign(out, { time: JSON.parse(line).time, level, msg })
  for (const source of [base, fields])
    for (const k in source) {
      const v = source[k]
      out[k] = /^(authorization|password|token|access_?token|refresh_?token|secret|client_?secret|cookie|api_?key)$/i.test(k)
        ? '[redacted]'
        : k === 'err' && v instanceof Error
          ? { name: v.name, message: v.message, stack: v.stack }
          : v
    }
  return JSON.stringify(out)
}

describe('log lines', () => {
  test('a request line is one JSON object: time, level and message first, then the fields in order', () => {
    const { logger, lines } = capture()
    logger.info('request', {
      requestId: 'r-1',
      method: 'GET',
      route: undefined,
      path: '/a"b',
      status: 200,
      durationMs: 0.25,
      ip: '127.0.0.1',
      userId: undefined,
    })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toStartWith('{"time":"')
    expect(lines[0]).toContain(
      '","level":"info","msg":"request","requestId":"r-1","method":"GET","path":"/a\\"b","status":200,"durationMs":0.25,"ip":"127.0.0.1"}',
    )
    expect(JSON.parse(lines[0]!)).toEqual({
      time: expect.any(String),
      level: 'info',
      msg: 'request',
      requestId: 'r-1',
      method: 'GET',
      path: '/a"b',
      status: 200,
      durationMs: 0.25,
      ip: '127.0.0.1',
    })
  })

  test('secrets are redacted and errors written with their name, message and stack', () => {
    const { logger, lines } = capture({ token: 'abc' })
    const err = new TypeError('bad\nthing')
    logger.error('failed', { password: 'hunter2', err, Authorization: 'Bearer x' })
    const line = JSON.parse(lines[0]!)
    expect(line).toMatchObject({ level: 'error', msg: 'failed', token: '[redacted]', password: '[redacted]', Authorization: '[redacted]' })
    expect(line.err).toEqual({ name: 'TypeError', message: 'bad\nthing', stack: err.stack })
  })

  test('a field repeating a child logger field, or named like the line’s own, keeps JSON.stringify’s place for it', () => {
    const { logger, lines } = capture({ component: 'a', n: 1 })
    logger.info('x', { n: 2, msg: 'shadowed', 7: 'index' })
    expect(lines[0]).toBe(expected(lines[0]!, 'info', 'x', { component: 'a', n: 1 }, { n: 2, msg: 'shadowed', 7: 'index' }))
  })

  test('whatever the fields hold, the line is the text JSON.stringify writes for them', () => {
    const value = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.constant(() => 1),
      fc.date({ noInvalidDate: true }),
      fc.jsonValue(),
    )
    const key = fc.oneof(fc.string(), fc.constantFrom('err', 'token', 'msg', 'time', '0', '12', '__proto__', 'userId'))
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.dictionary(key, value), fc.dictionary(key, value), (msg, base, fields) => {
        const { logger, lines } = capture(base)
        logger.warn(msg, fields)
        expect(lines[0]).toBe(expected(lines[0]!, 'warn', msg, base, fields))
      }),
      { numRuns: 500 },
    )
  })
})
