/** Progress as server-sent events, over a real socket, read with a conforming EventSource parser. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { LOGIN, sampleSite, startWorld, type Member, type PublishWorld } from './support.ts'

interface Received {
  event: string | undefined
  data: Record<string, any>
}

describe('publish progress stream', () => {
  let w: PublishWorld
  let m: Member
  let server: Server<unknown>
  let url: string
  beforeAll(async () => {
    w = await startWorld()
    m = await w.connectedMember()
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => w.t.app.handle(request) })
    url = `http://127.0.0.1:${server.port}/api/publish-codehost-pages`
  })
  afterAll(async () => {
    await server.stop(true)
    await w.close()
  })

  const post = (body: unknown, accept = 'text/event-stream') =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${m.token}` }, body: JSON.stringify(body) })

  async function readEvents(response: Response): Promise<Received[]> {
    const events: Received[] = []
    const stream = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
    for await (const e of stream) events.push({ event: e.event, data: JSON.parse(e.data) })
    return events
  }

  test('every step is a progress event, in order, then the answer as a published event', async () => {
    const res = await post({ repository: `${LOGIN}/streamed`, files: sampleSite().files })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const events = await readEvents(res)
    expect(events.map((e) => e.event)).toEqual(['progress', 'progress', 'progress', 'progress', 'progress', 'progress', 'published'])
    expect(events.slice(0, 6).map((e) => e.data.stage)).toEqual(['accepted', 'repository', 'fetched', 'committed', 'pushed', 'pages'])
    const tip = w.tip(LOGIN, 'streamed', 'gh-pages')!
    expect(events[0]!.data).toEqual({ stage: 'accepted', repository: `${LOGIN}/streamed`, branch: 'gh-pages', files: 5, bytes: expect.any(Number) })
    expect(events[1]!.data).toEqual({ stage: 'repository', repository: `${LOGIN}/streamed`, created: true })
    expect(events[2]!.data).toEqual({ stage: 'fetched', previousCommit: null })
    expect(events[3]!.data).toEqual({ stage: 'committed', commit: tip, unchanged: false })
    expect(events[4]!.data).toEqual({ stage: 'pushed', commit: tip })
    expect(events[5]!.data).toEqual({ stage: 'pages', pages: 'enabled', url: `https://${LOGIN}.github.io/streamed/` })
    expect(events[6]!.data).toMatchObject({ commit: tip, unchanged: false, pages: 'enabled', repositoryCreated: true })
  })

  test('an unchanged republish streams no pushed step', async () => {
    const events = await readEvents(await post({ repository: `${LOGIN}/streamed`, files: sampleSite().files }))
    expect(events.map((e) => e.data.stage ?? e.event)).toEqual(['accepted', 'repository', 'fetched', 'committed', 'pages', 'published'])
    expect(events.at(-1)!.data).toMatchObject({ unchanged: true, pages: 'unchanged' })
  })

  test('a failure after the stream started ends it with an error event holding the problem, not a published one', async () => {
    w.refusePushes(LOGIN, 'streamed', 'no pushes today')
    const res = await post({ repository: `${LOGIN}/streamed`, files: sampleSite('changed').files })
    expect(res.status).toBe(200)
    const events = await readEvents(res)
    expect(events.map((e) => e.data.stage ?? e.event)).toEqual(['accepted', 'repository', 'fetched', 'committed', 'error'])
    expect(events.at(-1)!.data).toMatchObject({ code: 'push_rejected', status: 409, reason: 'refused', requestId: res.headers.get('x-request-id') })
  })

  test('input refused before any work is a plain problem answer, even when a stream is asked for', async () => {
    const res = await post({ repository: `${LOGIN}/streamed`, files: [{ path: '../x', content: '' }] })
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toContain('application/problem+json')
    expect((await res.json()).code).toBe('invalid_site')
  })

  test('without Accept: text/event-stream the answer is JSON', async () => {
    const res = await post({ repository: `${LOGIN}/json-only`, files: sampleSite().files }, 'application/json')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect((await res.json()).repository).toBe(`${LOGIN}/json-only`)
  })
})
