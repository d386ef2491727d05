/** The pure parts of the agent protocol: reading client frames, checking commands, progress and ETA. */
import { describe, expect, test } from 'bun:test'
import { formatDuration, StepProgress } from '../../plugins/agents/tasks/eta.ts'
import { checkCommand, decodeClientMessage } from '../../plugins/agents/connections/protocol.ts'

describe('reading client frames', () => {
  test('text, bytes and already parsed values are read alike; size is measured before parsing', () => {
    const ping = { type: 'ping' as const, id: 'a' }
    for (const frame of [JSON.stringify(ping), Buffer.from(JSON.stringify(ping)), ping])
      expect(decodeClientMessage(frame, 100)).toEqual({ ok: true, message: ping })
    expect(decodeClientMessage('x'.repeat(101), 100)).toMatchObject({ ok: false, error: { code: 'message_too_large' } })
    expect(decodeClientMessage({ type: 'ping', id: 'é'.repeat(60) }, 100)).toMatchObject({ ok: false, error: { code: 'message_too_large' } })
  })

  test('each malformed frame has its own code, with the client id when it could be read', () => {
    expect(decodeClientMessage('{', 100)).toMatchObject({ ok: false, error: { code: 'invalid_json' } })
    for (const value of [42, 'text', null, [1]]) expect(decodeClientMessage(value, 100)).toMatchObject({ ok: false, error: { code: 'invalid_json' } })
    expect(decodeClientMessage({ type: 'hello', id: 'q' }, 100)).toMatchObject({ ok: false, error: { code: 'unknown_type', id: 'q', field: 'type' } })
    expect(decodeClientMessage({ type: '__proto__' }, 100)).toMatchObject({ ok: false, error: { code: 'unknown_type' } })
    expect(decodeClientMessage({ type: 'cancel', id: 'q' }, 100)).toMatchObject({ ok: false, error: { code: 'invalid_message', id: 'q', field: 'taskId' } })
    expect(decodeClientMessage({ type: 'ping', extra: 1 }, 100)).toMatchObject({ ok: false, error: { code: 'invalid_message' } })
    expect(decodeClientMessage({ type: 'subscribe', taskId: 't', afterSeq: -1 }, 100)).toMatchObject({
      ok: false,
      error: { code: 'invalid_message', field: 'afterSeq' },
    })
  })

  test("a command's params are checked against its own schema", () => {
    expect(checkCommand('i', 'debug', { code: 'x', language: 'ruby' })).toMatchObject({
      ok: false,
      error: { code: 'invalid_message', field: 'params.language' },
    })
    expect(checkCommand('i', 'analyze', {})).toMatchObject({ ok: false, error: { field: 'params.importId' } })
    expect(checkCommand('i', 'status', undefined)).toEqual({ ok: true, command: 'status', params: {} })
    expect(checkCommand('i', 'constructor', {})).toMatchObject({ ok: false, error: { code: 'unknown_command' } })
  })
})

describe('progress and ETA', () => {
  test('durations are written short', () => {
    expect([0, 400, 1000, 44_200, 59_999, 60_000, 119_000, 3_540_000, 3_600_000, 3_900_000].map(formatDuration)).toEqual([
      '1s',
      '1s',
      '1s',
      '45s',
      '1m',
      '1m',
      '2m',
      '59m',
      '1h',
      '1h5m',
    ])
  })

  test('the ETA comes from the steps left and the observed step durations, and no ETA before a step has finished', () => {
    let now = 0
    const progress = new StepProgress(4, { now: () => now })
    progress.start(0)
    expect(progress.eta()).toBeUndefined()
    now = 10_000
    progress.start(1)
    // One 10 s step seen; the running one just started and two more follow: 30 s.
    expect(progress.remainingMs()).toBe(30_000)
    now = 14_000
    expect(progress.eta()).toBe('26s')
    now = 40_000
    progress.start(2)
    // Steps took 10 s and 30 s: a 20 s mean, two steps left.
    expect(progress.eta()).toBe('40s')
    progress.setTotal(10)
    expect(progress.eta()).toBe('3m')
  })

  test('the percentage never goes back when a plan adds steps', () => {
    let now = 0
    const progress = new StepProgress(2, { now: () => now })
    progress.start(0)
    now = 1000
    progress.start(1)
    expect(progress.percent()).toBe(50)
    progress.setTotal(10)
    expect(progress.percent()).toBe(50)
    progress.start(6)
    expect(progress.percent()).toBe(60)
  })
})
