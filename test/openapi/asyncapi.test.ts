/**
 * The AsyncAPI document at /asyncapi.json: valid for @asyncapi/parser, and made of the schemas the agent channel
 * validates with and the chat stream chunks the service writes.
 */
import { Parser } from '@asyncapi/parser'
import { afterAll, describe, expect, test } from 'bun:test'
import { CLIENT_MESSAGES, SERVER_MESSAGES } from '../../plugins/agents/index.ts'
import { served } from './support.ts'

const { t, asyncapi } = await served()
afterAll(() => t.close())
const parser = new Parser()
const ERROR = 0
const WARNING = 1

describe('the AsyncAPI document', () => {
  test('is served beside the OpenAPI document and parses without errors or warnings', async () => {
    const res = await t.request('/asyncapi.json')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(asyncapi.asyncapi).toStartWith('3.')
    const { document, diagnostics } = await parser.parse(JSON.stringify(asyncapi))
    expect(diagnostics.filter((d) => d.severity === ERROR || d.severity === WARNING).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([])
    expect(document).toBeDefined()
  })

  test('the parser rejects a document whose operation names a message its channel lacks', async () => {
    const broken = structuredClone(asyncapi)
    broken.operations.sendAgentMessage.messages.push({ $ref: '#/channels/agent/messages/noSuchMessage' })
    const { document, diagnostics } = await parser.parse(JSON.stringify(broken))
    expect(document).toBeUndefined()
    expect(diagnostics.some((d) => d.severity === ERROR)).toBe(true)
  })

  test('the agent channel carries every client and server message of the protocol, with their schemas', async () => {
    const { document } = await parser.parse(JSON.stringify(asyncapi))
    const agent = document!.channels().get('agent')!
    expect(agent.address()).toBe('/ws/agent')
    expect(agent.bindings().has('ws')).toBe(true)
    const names = agent
      .messages()
      .all()
      .map((m) => m.name())
    expect(names.sort()).toEqual([...Object.keys(CLIENT_MESSAGES), ...Object.keys(SERVER_MESSAGES)].sort())
    const receive = document!.operations().get('receiveAgentMessage')!
    expect(receive.action()).toBe('receive')
    expect(
      receive
        .messages()
        .all()
        .map((m) => m.name())
        .sort(),
    ).toEqual(Object.keys(CLIENT_MESSAGES).sort())
    const subscribe = asyncapi.components.messages.clientSubscribe.payload
    expect(subscribe.properties.afterSeq).toMatchObject({ type: 'integer', minimum: 0 })
    expect(subscribe.additionalProperties).toBe(false)
  })

  test('the chat streams carry the UI message chunks, reset-step and the search decision among them', async () => {
    const { document } = await parser.parse(JSON.stringify(asyncapi))
    for (const [channel, address] of [
      ['chat', '/api/chat'],
      ['enhancedChat', '/api/enhanced-chat'],
      ['chatResume', '/api/chat/{chatId}/stream'],
    ] as const) {
      const stream = document!.channels().get(channel)!
      expect(stream.address()).toBe(address)
      const names = stream
        .messages()
        .all()
        .map((m) => m.name())
      expect(names).toEqual(expect.arrayContaining(['start', 'text-delta', 'reset-step', 'data-search-decision', 'finish', '[DONE]']))
    }
    const decision = asyncapi.components.messages.chunkDataSearchDecision.payload
    expect(decision.properties.type).toMatchObject({ const: 'data-search-decision' })
    expect(decision.properties.data.required).toEqual(['decision', 'confidence', 'threshold', 'method', 'tokens', 'reason'])
    expect(asyncapi.components.messages.chunkResetStep.summary).toContain('Withdraws')
  })
})
