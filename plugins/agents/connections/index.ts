/**
 * The ways into the tasks. Over /ws/agent: the upgrade's handshake (handshake.ts), each client frame read against the
 * protocol (protocol.ts), and the hub of this process's connections (connections.ts) that starts and follows tasks,
 * ending a connection whose user lost the right to it (standing.ts). From the rest of the service (the chat's
 * run_agent tool): the runner (runner.ts), with the same checks as a command over the socket.
 */
export {
  CLOSE_POLICY,
  createConnectionHub,
  type AgentConnection,
  type AgentSocket,
  type ConnectionGrant,
  type ConnectionHub,
  type SlotReservation,
} from './connections.ts'
export { handshakeProblem, refusedHandshake } from './handshake.ts'
export { connectionStanding } from './standing.ts'
export { createAgentRunner, type AgentRunner } from './runner.ts'
