import { Elysia, t, type DocumentDecoration } from 'elysia'
import type { AccessService, Principal } from '../../src/auth/access-service.ts'
import { bearerFrom } from '../../src/auth/bearer.ts'
import { authenticateRequest, requireScope } from '../../src/auth/plugin.ts'
import { upgradeOriginAllowed, type OriginPolicy } from '../../src/cors.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import {
  CLOSE_POLICY,
  handshakeProblem,
  refusedHandshake,
  type AgentConnection,
  type AgentSocket,
  type ConnectionGrant,
  type ConnectionHub,
  type SlotReservation,
} from './connections/index.ts'
import { protocolSchema } from './schemas.ts'
export { agentsSettings } from './settings.ts'

export { createAgentService, createMemoryTaskLog, createRedisTaskLog, type AgentService } from './tasks/index.ts'
export { createCommands } from './commands.ts'
export { connectionStanding, createAgentRunner, createConnectionHub, type AgentRunner, type ConnectionHub } from './connections/index.ts'
export { createWorkspaces, workspaceRoutes, type Workspaces } from './workspaces/index.ts'
export { developCommand } from './develop/index.ts'
export { CLIENT_MESSAGES, COMMAND_PARAMS, commandParamsSchema, MESSAGE_ERROR_CODES, PROTOCOL_VERSION, SERVER_MESSAGES } from './schemas.ts'

export interface AgentsPluginOptions {
  hub: ConnectionHub
  access: AccessService
  /** Browser pages allowed to connect (CORS_ORIGINS, PUBLIC_BASE_URL); others are refused 403 before the upgrade. */
  origins: OriginPolicy
}

/** GET /ws/agent in the OpenAPI document: the upgrade, its refusals, and where the messages are described. */
const upgradeDetail = {
  summary: 'Open the agent channel (WebSocket upgrade)',
  description:
    'Upgrades to a WebSocket (RFC 6455) carrying JSON text frames: the messages are described by the AsyncAPI document at /asyncapi.json ' +
    'and as JSON Schema at GET /api/agents/protocol. Needs a token with the `agents:run` scope, in Authorization or, from a browser, ' +
    'as the subprotocol pair `bearer, <token>`. A refused upgrade is answered before the switch: 400 for a malformed handshake, 401, ' +
    '403 (scope, or a browser Origin not in CORS_ORIGINS), 429 when the user holds too many connections; a plain GET is 426.',
  security: [{ bearer: ['agents:run'] }],
  parameters: [
    { name: 'Upgrade', in: 'header', required: true, schema: { type: 'string', enum: ['websocket'] } },
    { name: 'Sec-WebSocket-Key', in: 'header', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9+/]{22}==$' } },
    { name: 'Sec-WebSocket-Version', in: 'header', required: true, schema: { type: 'string', enum: ['13'] } },
    { name: 'Sec-WebSocket-Protocol', in: 'header', required: false, description: 'From a browser: `bearer, <token>`', schema: { type: 'string' } },
  ],
  responses: {
    101: {
      description: 'Switching Protocols: the channel is open',
      headers: { 'Sec-WebSocket-Protocol': { description: '`bearer` when the token came as a subprotocol', schema: { type: 'string' } } },
    },
  },
} satisfies DocumentDecoration

interface AgentSocketData {
  request: Request
  agent?: AgentConnection
}

/**
 * GET /ws/agent, the agent channel (scope agents:run; the token in Authorization, or for browsers as the
 * subprotocol pair `['bearer', token]`), and GET /api/agents/protocol, its JSON Schema.
 */
export function agentsPlugin(options: AgentsPluginOptions) {
  const { hub, access, origins } = options
  // The caller verified at the upgrade and the slot reserved for them, taken up when the socket opens.
  const upgrades = new WeakMap<Request, { principal: Principal; slot: SlotReservation; grant: ConnectionGrant }>()
  const releaseSlot = (request: Request) => {
    upgrades.get(request)?.slot.release()
    upgrades.delete(request)
  }
  const schema = protocolSchema()
  return (
    new Elysia({ name: 'agents', detail: { tags: ['agents'] } })
      // Live task messages go out by one topic publish to every follower's socket, not a send per socket.
      .onStart(({ server }) => {
        // biome-ignore lint/correctness/useHookAtTopLevel: a method of the connection hub, not a React hook
        if (server) hub.useServer(server)
      })
      .get('/api/agents/protocol', () => schema, {
        response: { 200: t.Record(t.String(), t.Unknown()) },
        detail: {
          summary: 'The agent WebSocket protocol as a JSON Schema document',
          description: 'Every client and server message of GET /ws/agent, the parameters of each command, the error codes and the close codes.',
        },
      })
      // A plain GET (no Upgrade header) is routed here rather than to the WebSocket handler; in the OpenAPI document
      // this operation stands for the upgrade as a whole (the messages are in the AsyncAPI document).
      .get(
        '/ws/agent',
        () => {
          throw new AppError('upgrade_required', 'GET /ws/agent is a WebSocket endpoint; connect with Upgrade: websocket', {
            headers: { upgrade: 'websocket' },
          })
        },
        { response: { 400: problem, 401: problem, 403: problem, 426: problem, 429: problem, 503: problem }, detail: upgradeDetail },
      )
      .ws('/ws/agent', {
        async beforeHandle({ request, set }) {
          // Elysia runs a WebSocket route's beforeHandle both as a lifecycle hook and before the upgrade.
          if (upgrades.has(request)) return
          // Checked first, like the 426 of a plain GET: what Bun would refuse must never hold a slot.
          const malformed = handshakeProblem(request.headers)
          if (malformed) throw malformed
          // Against cross-site WebSocket hijacking: a page elsewhere is refused before its token is even looked at.
          if (!upgradeOriginAllowed(origins, request.headers))
            throw new AppError('forbidden', `Pages on ${request.headers.get('origin')} may not open agent connections; list the origin in CORS_ORIGINS`)
          const principal = await authenticateRequest(access, request)
          requireScope(principal, 'agents:run')
          hub.admit()
          const slot = hub.reserve(principal.userId)
          if (!slot) throw new AppError('too_many_connections', 'You already hold the most agent connections allowed to this server; close one first')
          const bearer = bearerFrom(request.headers)
          upgrades.set(request, { principal, slot, grant: (bearer && access.grantOf(bearer.token)) || {} })
          if (bearer?.subprotocol) set.headers['sec-websocket-protocol'] = bearer.subprotocol
        },
        // Runs after every upgrade: `response` (set, though typed only for HTTP routes) is empty once Bun switched the
        // connection and a value when Bun refused it. Only a refusal throws; an error would stay on the socket's context.
        afterHandle({ request, response }: { request: Request; response?: unknown }) {
          if (response === undefined) {
            requestMeta(request).switchedProtocols = true
            return
          }
          releaseSlot(request)
          throw refusedHandshake()
        },
        // Runs after every answer, thrown errors included; by then an opened socket has already claimed its slot.
        afterResponse({ request }) {
          releaseSlot(request)
        },
        open(ws) {
          const data = ws.data as unknown as AgentSocketData
          const upgrade = upgrades.get(data.request)
          upgrades.delete(data.request)
          // Only when the reservation ran out first, which leaves no slot to count this socket against.
          if (!upgrade?.slot.claim()) return ws.close(CLOSE_POLICY, 'upgrade expired')
          data.agent = hub.open(ws.raw as unknown as AgentSocket, { userId: upgrade.principal.userId, orgId: upgrade.principal.orgId }, upgrade.grant)
        },
        message(ws, message) {
          const agent = (ws.data as unknown as AgentSocketData).agent
          if (agent) hub.receive(agent, message)
        },
        pong(ws) {
          const agent = (ws.data as unknown as AgentSocketData).agent
          if (agent) hub.pong(agent)
        },
        close(ws) {
          const agent = (ws.data as unknown as AgentSocketData).agent
          if (agent) hub.close(agent)
        },
        detail: {
          summary: 'Agent channel (WebSocket)',
          description:
            'See GET /api/agents/protocol for the messages. Refused upgrades answer 400, 401, 403 (also for a browser Origin not in CORS_ORIGINS) or 429 with a problem body before the switch.',
        },
      })
  )
}
