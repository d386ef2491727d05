/** The checker the documentation examples are held to: it must find what a page gets wrong. */
import { describe, expect, test } from 'bun:test'
import { exchanges, headerProblems, parseSse, shapeProblems, sseProblems } from './exchanges.ts'

const fence = '```'

describe('reading examples from a page', () => {
  test('a request and the answer after it make one exchange, in lists too', () => {
    const page = [
      'Intro',
      '',
      `1. Call it:`,
      '',
      `   ${fence}http`,
      '   POST /api/things?x=1',
      '   Authorization: Bearer <token>',
      '   Content-Type: application/json',
      '',
      '   {"name": "a"}',
      `   ${fence}`,
      '',
      'Some prose between.',
      '',
      `${fence}http`,
      'HTTP/1.1 201 Created',
      'Content-Type: application/json',
      '',
      '{"id": "t1"}',
      fence,
      '',
      `${fence}json`,
      '{"not": "an exchange"}',
      fence,
    ].join('\n')
    const [exchange, ...rest] = exchanges(page)
    expect(rest).toEqual([])
    expect(exchange!.line).toBe(5)
    expect(exchange!.request).toMatchObject({ method: 'POST', path: '/api/things?x=1', body: '{"name": "a"}' })
    expect(exchange!.request.headers).toEqual([
      ['Authorization', 'Bearer <token>'],
      ['Content-Type', 'application/json'],
    ])
    expect(exchange!.response).toMatchObject({ status: 201, headers: [['Content-Type', 'application/json']], body: '{"id": "t1"}' })
  })

  test('a request without its answer, an answer without a request, or another kind of http block is refused', () => {
    const block = (text: string) => `${fence}http\n${text}\n${fence}\n`
    expect(() => exchanges(block('GET /health'))).toThrow('line 1 has no documented answer')
    expect(() => exchanges(block('GET /health') + block('GET /ready'))).toThrow('before the next request')
    expect(() => exchanges(block('HTTP/1.1 200 OK'))).toThrow('follows no request')
    expect(() => exchanges(block('fetch /health'))).toThrow('neither a request line nor a status line')
  })
})

describe('comparing a documented answer with the real one', () => {
  test('every documented member must be answered with the same type; extra members are fine', () => {
    expect(shapeProblems({ a: 'x', b: 1, c: null, d: { e: true } }, { a: 'y', b: 2, c: null, d: { e: false, f: 1 }, g: 0 })).toEqual([])
    expect(shapeProblems({ a: 'x', b: 1 }, { a: 'x' })).toEqual(['$.b: documented but not answered'])
    expect(shapeProblems({ a: 1 }, { a: '1' })[0]).toStartWith('$.a: documented number, answered string')
    expect(shapeProblems({ a: null }, { a: {} })[0]).toStartWith('$.a: documented null, answered object')
  })

  test('codes, kinds and states must be the documented ones; ids and times may differ', () => {
    expect(shapeProblems({ code: 'not_found', requestId: 'r1' }, { code: 'not_found', requestId: 'r2' })).toEqual([])
    expect(shapeProblems({ code: 'not_found' }, { code: 'forbidden' })).toEqual(['$.code: documented "not_found", answered "forbidden"'])
    expect(shapeProblems({ data: { status: 'done' } }, { data: { status: 'running' } })).toEqual(['$.data.status: documented "done", answered "running"'])
  })

  test('an array must hold at least the documented elements, each of the documented shape', () => {
    expect(shapeProblems({ list: [{ id: 'a' }] }, { list: [{ id: 'x' }, { id: 'y' }] })).toEqual([])
    expect(shapeProblems({ list: [{ id: 'a' }, { id: 'b' }] }, { list: [{ id: 'x' }] })).toEqual(['$.list: documented 2 elements, answered 1'])
    expect(shapeProblems({ list: [{ id: 'a' }] }, { list: [{ name: 'x' }] })).toEqual(['$.list[0].id: documented but not answered'])
  })

  test('documented headers must be answered; media types and a few headers must match', () => {
    const real = new Headers({ 'content-type': 'application/json;charset=utf-8', 'x-cache': 'MISS', 'x-request-id': 'r9' })
    expect(
      headerProblems(
        [
          ['Content-Type', 'application/json'],
          ['x-request-id', 'r1'],
        ],
        real,
      ),
    ).toEqual([])
    expect(headerProblems([['Content-Type', 'text/event-stream']], real)).toEqual([
      'header Content-Type: documented text/event-stream, answered application/json;charset=utf-8',
    ])
    expect(headerProblems([['x-cache', 'HIT']], real)).toEqual(['header x-cache: documented HIT, answered MISS'])
    expect(headerProblems([['Location', '/x']], real)).toEqual(['header Location: documented but not answered'])
  })
})

describe('comparing event streams', () => {
  const real = parseSse(
    [
      ': open',
      'id: gen_a:1',
      'data: {"type":"start","messageId":"m1"}',
      '',
      'id: gen_a:2',
      'data: {"type":"data-plan","data":{"status":"pending"}}',
      '',
      'id: gen_a:3',
      'data: {"type":"data-plan","data":{"status":"done"}}',
      '',
      'id: gen_a:4',
      'data: [DONE]',
      '',
    ].join('\n'),
  )

  test('events are read with their ids and names; comments and elisions are skipped', () => {
    expect(real.map((e) => e.id)).toEqual(['gen_a:1', 'gen_a:2', 'gen_a:3', 'gen_a:4'])
    expect(parseSse('event: progress\ndata: {"stage":"accepted"}\n\n…\n\nevent: published\ndata: {}\n')).toEqual([
      { event: 'progress', data: '{"stage":"accepted"}' },
      { event: 'published', data: '{}' },
    ])
  })

  test('documented events must come in order, each matching a real one', () => {
    const documented = parseSse('id: gen_x:1\ndata: {"type":"start","messageId":"m"}\n\ndata: {"type":"data-plan","data":{"status":"done"}}\n\ndata: [DONE]\n')
    expect(sseProblems(documented, real)).toEqual([])
    const outOfOrder = parseSse('data: [DONE]\n\ndata: {"type":"start"}\n')
    expect(sseProblems(outOfOrder, real)[0]).toStartWith('event 2 (message|start): not answered after event 4')
  })

  test('a documented event that no real one fits, or an id of another kind, is reported', () => {
    expect(sseProblems(parseSse('data: {"type":"data-plan","data":{"status":"failed"}}\n'), real)).toEqual([
      'event 1 (message|data-plan) data.data.status: documented "failed", answered "pending"',
    ])
    expect(sseProblems(parseSse('id: 7\ndata: {"type":"start"}\n'), real)).toEqual(['event 1 (message|start): documented id 7, answered gen_a:1'])
    expect(sseProblems(parseSse('data: {"type":"finish"}\n'), real)[0]).toStartWith('event 1 (message|finish): not answered')
  })
})
