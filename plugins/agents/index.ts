import { Elysia, t } from 'elysia'
import type { AccessService, Principal } from '../../src/auth/access-service.ts'
import { bearerFrom } from '../../src/auth/bearer.ts'
import { authenticateRequest, requireScope } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import type { AgentConnection, AgentSocket, ConnectionHub } from './connections.ts'
import { protocolSchema } from './model.ts'

export interface AgentsPluginOptions {
  hub: ConnectionHub
  access: AccessService
}

interface AgentSocketData {
  request: Request
  agent?: AgentConnection
}

/**
 * GET /ws/agent, the agent channel (scope agents:run; the token in Authorization, or for browsers as the
 * subprotocol pair `['bearer', token]`), and GET /api/agents/protocol, its JSON Schema.
 */
export function agentsPlugin(options: AgentsPluginOptions) {
  const { hub, access } = options
  // The caller verified at the upgrade, read again when the socket opens.
  const callers = new WeakMap<Request, Principal>()
  const schema = protocolSchema()
  return new Elysia({ name: 'agents', detail: { tags: ['agents'] } })
    .get('/api/agents/protocol', () => schema, {
      response: { 200: t.Record(t.String(), t.Unknown()) },
      detail: {
        summary: 'The agent WebSocket protocol as a JSON Schema document',
        description: 'Every client and server message of GET /ws/agent, the parameters of each command, the error codes and the close codes.',
      },
    })
    // A plain GET (no Upgrade header) is routed here rather than to the WebSocket handler.
    .get(
      '/ws/agent',
      () => {
        throw new AppError('upgrade_required', 'GET /ws/agent is a WebSocket endpoint; connect with Upgrade: websocket', { headers: { upgrade: 'websocket' } })
      },
      { detail: { hide: true } },
    )
    .ws('/ws/agent', {
      async beforeHandle({ request, set }) {
        // Elysia runs a WebSocket route's beforeHandle both as a lifecycle hook and before the upgrade.
        if (callers.has(request)) return
        const principal = await authenticateRequest(access, request)
        requireScope(principal, 'agents:run')
        if (!hub.reserve(principal.userId))
          throw new AppError('too_many_connections', 'You already hold the most agent connections allowed to this server; close one first')
        callers.set(request, principal)
        const bearer = bearerFrom(request.headers)
        if (bearer?.subprotocol) set.headers['sec-websocket-protocol'] = bearer.subprotocol
      },
      open(ws) {
        const data = ws.data as unknown as AgentSocketData
        const principal = callers.get(data.request)!
        callers.delete(data.request)
        data.agent = hub.open(ws.raw as unknown as AgentSocket, { userId: principal.userId, orgId: principal.orgId })
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
        description: 'See GET /api/agents/protocol for the messages. Refused upgrades answer 400, 401, 403 or 429 with a problem body before the switch.',
      },
    })
}
