/**
 * The AsyncAPI 3.1 document of what OpenAPI cannot say: the messages of the agent WebSocket (GET /ws/agent) and the
 * events of the chat streams (the AI SDK UI message stream over SSE). It describes this service: it receives the
 * agent clients' messages and sends the rest. Built from the same schemas that validate and type the messages.
 */
import type { TSchema } from '@sinclair/typebox'
import { UI_CHUNKS } from '../../src/llm/ui-stream.ts'
import { CLIENT_MESSAGES, COMMAND_PARAMS, MESSAGE_ERROR_CODES, PROTOCOL_VERSION, SERVER_MESSAGES } from '../agents/index.ts'

type Json = Record<string, unknown>

/** A TypeBox schema as plain JSON Schema (its symbol-keyed markers dropped). */
const plain = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema))

/** `agent_command` and `tool-input-start` as message keys: `agentCommand`, `toolInputStart`. */
const camel = (name: string) => name.replace(/[-_](\w)/g, (_, c: string) => c.toUpperCase())

const bearerScheme = { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token (POST /auth/login)' }
const bearer = { $ref: '#/components/securitySchemes/bearer' }

function messagesOf(prefix: string, schemas: Record<string, TSchema>, describe: (name: string) => string): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [
      camel(`${prefix}_${name}`),
      { name, title: name, summary: schema.description ?? describe(name), contentType: 'application/json', payload: plain(schema) },
    ]),
  )
}

/** References to `names` in the channel `channel`, for an operation. */
const channelMessages = (channel: string, names: string[]) => names.map((name) => ({ $ref: `#/channels/${channel}/messages/${name}` }))
const componentRefs = (names: string[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/messages/${name}` }]))

const SSE_FRAMING =
  'Server-Sent Events: each event is `id: <generationId>:<seq>` and `data: <chunk JSON>`; comment lines keep the connection alive; ' +
  'the stream closes with `data: [DONE]`. Reconnect with Last-Event-ID at GET /api/chat/{chatId}/stream to get only what was missed.'

export function asyncApiDocument(info: { title: string; version: string }): Json {
  const client = messagesOf('client', CLIENT_MESSAGES, (name) => `Client message ${name}`)
  const server = messagesOf('server', SERVER_MESSAGES, (name) => `Server message ${name}`)
  const chunks = messagesOf('chunk', UI_CHUNKS, (name) => `Chunk ${name}`)
  const done = {
    name: '[DONE]',
    title: '[DONE]',
    summary: 'The last event of a stream',
    contentType: 'text/plain',
    payload: { type: 'string', const: '[DONE]' },
  }
  const chunkNames = [...Object.keys(chunks), 'streamDone']
  const streamChannel = (address: string, description: string, parameters?: Json) => ({
    address,
    description: `${description} ${SSE_FRAMING}`,
    ...(parameters ? { parameters } : {}),
    messages: componentRefs(chunkNames),
  })
  const streamOperation = (channel: string, method: 'GET' | 'POST', summary: string) => ({
    action: 'send',
    summary,
    channel: { $ref: `#/channels/${channel}` },
    security: [bearer],
    bindings: { http: { method, bindingVersion: '0.3.0' } },
    messages: channelMessages(channel, chunkNames),
  })

  return {
    asyncapi: '3.1.0',
    id: `urn:realtime-ai-backend:${PROTOCOL_VERSION}`,
    info: {
      title: `${info.title}: agent channel and chat streams`,
      version: info.version,
      description:
        'Addresses are relative to the service. The HTTP side of every channel (tokens, refusals, request bodies) is in the OpenAPI document at /swagger/json. ' +
        `Agent error codes: ${Object.entries(MESSAGE_ERROR_CODES)
          .map(([code, text]) => `\`${code}\` (${text})`)
          .join('; ')}.`,
    },
    defaultContentType: 'application/json',
    channels: {
      agent: {
        address: '/ws/agent',
        title: `Agent channel (${PROTOCOL_VERSION})`,
        description:
          'A WebSocket of JSON text frames, one message each. Needs the `agents:run` scope: the token in Authorization, or from a browser as the subprotocol pair `bearer, <token>`. ' +
          'Close codes: 1000 normal, 1001 server shutting down (reconnect and subscribe), 1008 too many bad messages, 1009 frame too large, 4000 idle.',
        messages: componentRefs([...Object.keys(client), ...Object.keys(server)]),
        bindings: { ws: { method: 'GET', bindingVersion: '0.1.0' } },
      },
      chat: streamChannel('/api/chat', "The answer to POST /api/chat (the AI SDK's chat transport body)."),
      enhancedChat: streamChannel(
        '/api/enhanced-chat',
        'The answer to POST /api/enhanced-chat: a plan, its steps and their checks as data parts, then the answer.',
      ),
      chatResume: streamChannel('/api/chat/{chatId}/stream', "The chat's running answer, resumed.", {
        chatId: { description: 'The chat id (the AI SDK chat id)' },
      }),
    },
    operations: {
      receiveAgentMessage: {
        action: 'receive',
        summary: 'What an agent client sends: commands, cancel, subscribe, unsubscribe, ping',
        channel: { $ref: '#/channels/agent' },
        security: [bearer],
        messages: channelMessages('agent', Object.keys(client)),
      },
      sendAgentMessage: {
        action: 'send',
        summary: "What the service sends: a task's log (ack, progress, log, then result or error) and the direct replies",
        channel: { $ref: '#/channels/agent' },
        security: [bearer],
        messages: channelMessages('agent', Object.keys(server)),
      },
      sendChatAnswer: streamOperation('chat', 'POST', 'Stream the answer to a chat message'),
      sendEnhancedChatAnswer: streamOperation('enhancedChat', 'POST', 'Stream the enhanced answer: plan, steps, checks'),
      sendResumedChatAnswer: streamOperation('chatResume', 'GET', "Resume the chat's running answer"),
    },
    components: {
      messages: { ...client, ...server, ...chunks, streamDone: done },
      schemas: Object.fromEntries(Object.entries(COMMAND_PARAMS).map(([name, schema]) => [`${name}Params`, plain(schema)])),
      securitySchemes: { bearer: bearerScheme },
    },
  }
}
