import { Elysia, t, type DocumentDecoration } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { Caller } from '../../src/auth/caller.ts'
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

export function agentsPlugin(options: AgentsPluginOptions) {
  const { hub, access, origins } = options

  /**
   * What Bun keeps with each agent socket, and the handlers the framework's WebSocket dispatch calls on it: one
   * small object per socket, its methods shared, so an idle connection holds no closures or request context.
   */
  class AgentSocketData {
    agent: AgentConnection | undefined
    /** The caller verified at the upgrade and the slot reserved for them; dropped once the socket opens. */
    private upgrade: { caller: Caller; grant: ConnectionGrant; slot: SlotReservation } | undefined

    constructor(upgrade: { caller: Caller; grant: ConnectionGrant; slot: SlotReservation }) {
      this.upgrade = upgrade
    }

    open(ws: AgentSocket) {
      const upgrade = this.upgrade
      this.upgrade = undefined
      // Only when the reservation ran out first, which leaves no slot to count this socket against.
      if (!upgrade?.slot.claim()) return ws.close(CLOSE_POLICY, 'upgrade expired')
      this.agent = hub.open(ws, upgrade.caller, upgrade.grant)
    }

    message(_ws: AgentSocket, message: unknown) {
      if (this.agent) hub.receive(this.agent, message)
    }

    pong() {
      if (this.agent) hub.pong(this.agent)
    }

    close() {
      if (this.agent) hub.close(this.agent)
    }
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
      // The upgrade is done here rather than by the framework's `.ws` route, which would keep the whole request
      // context and a set of closures with every socket. In the OpenAPI document this operation stands for the
      // upgrade as a whole (the messages are in the AsyncAPI document).
      .get(
        '/ws/agent',
        async ({ request, set, server }) => {
          // The framework's own test for a WebSocket request; anything else is a plain GET.
          if (request.headers.get('upgrade') !== 'websocket')
            throw new AppError('upgrade_required', 'GET /ws/agent is a WebSocket endpoint; connect with Upgrade: websocket', {
              headers: { upgrade: 'websocket' },
            })
          // Checked first: what Bun would refuse must never hold a slot.
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
          if (bearer?.subprotocol) set.headers['sec-websocket-protocol'] = bearer.subprotocol
          // Only what the open connection needs of the token: who, and what ends its right.
          const data = new AgentSocketData({
            caller: { userId: principal.userId, orgId: principal.orgId },
            grant: (bearer && access.grantOf(bearer.token)) || {},
            slot,
          })
          const headers = Object.keys(set.headers).length > 0 ? (set.headers as Record<string, string>) : undefined
          if (!server?.upgrade(request, { headers, data })) {
            slot.release()
            throw refusedHandshake()
          }
          requestMeta(request).switchedProtocols = true
        },
        { response: { 400: problem, 401: problem, 403: problem, 426: problem, 429: problem, 503: problem }, detail: upgradeDetail },
      )
  )
}
