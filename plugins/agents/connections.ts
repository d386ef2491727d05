/**
 * The open agent connections of this process: what each may do (caller, per-user cap, bad-message budget), the
 * tasks each follows, the heartbeat that pings them all and closes the silent ones, and the handling of every
 * client message. Kept small per connection: 10,000 idle ones must fit in a few KB each.
 */
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { RateCheck, RateLimiter, RatePolicy } from '../../src/rate-limit/index.ts'
import { checkCommand, decodeClientMessage, type ProtocolError } from './protocol.ts'
import type { ClientMessage } from './model.ts'
import { TaskError, type AgentCaller, type AgentService } from './service.ts'
import { paramsProblem } from './commands.ts'

/** What the connection needs of Bun's ServerWebSocket. */
export interface AgentSocket {
  sendText(text: string): number
  ping(data?: string): number
  close(code?: number, reason?: string): void
  terminate(): void
}

export interface AgentConnectionSettings {
  maxConnectionsPerUser: number
  maxMessageBytes: number
  maxBadMessages: number
  heartbeatIntervalMs: number
  idleTimeoutMs: number
}

export interface ConnectionHubOptions {
  agents: AgentService
  settings: AgentConnectionSettings
  logger: Logger
  /** Commands spend the chat budget and the burst ceiling, like POST /api/chat. */
  rateLimit: { limiter: RateLimiter; policies: readonly Readonly<RatePolicy>[] }
  /**
   * How long a slot reserved at the upgrade waits for its socket to open before it is given back. Bun opens the
   * socket inside the upgrade call, so this only bounds paths that never reach it. Default 10,000 ms.
   */
  reservationTimeoutMs?: number
}

/** A connection slot held from the upgrade request to the open socket; it ends exactly once. */
export interface SlotReservation {
  /** The socket opened: the slot becomes the connection's (freed by close). False when the reservation had already ended. */
  claim(): boolean
  /** The upgrade will not end in an open socket: the slot is free again. Does nothing once claimed or released. */
  release(): void
}

export const CLOSE_GOING_AWAY = 1001
export const CLOSE_POLICY = 1008
export const CLOSE_IDLE = 4000

const BAD_WINDOW_MS = 60_000

export class AgentConnection {
  lastSeen = Date.now()
  closing = false
  private badCount = 0
  private badWindowStart = 0
  /** Tasks this connection follows, with the function that stops following. */
  follows: Map<string, () => void> | undefined

  constructor(
    readonly socket: AgentSocket,
    readonly caller: AgentCaller,
  ) {}

  send(message: Record<string, unknown>): void {
    this.socket.sendText(JSON.stringify(message))
  }

  /** Counts a bad message; true when the budget for the minute is spent. */
  countBad(limit: number, now: number): boolean {
    if (now - this.badWindowStart > BAD_WINDOW_MS) {
      this.badWindowStart = now
      this.badCount = 0
    }
    return ++this.badCount > limit
  }

  follow(taskId: string, stop: () => void): void {
    this.follows ??= new Map()
    this.follows.get(taskId)?.()
    this.follows.set(taskId, stop)
  }

  unfollow(taskId: string): boolean {
    const stop = this.follows?.get(taskId)
    if (!stop) return false
    stop()
    this.follows!.delete(taskId)
    return true
  }

  release(): void {
    if (this.follows) for (const stop of this.follows.values()) stop()
    this.follows = undefined
  }
}

const BAD_MESSAGE_CODES = new Set(['invalid_json', 'message_too_large', 'unknown_type', 'invalid_message', 'unknown_command'])

export function createConnectionHub(options: ConnectionHubOptions) {
  const { agents, settings, logger } = options
  const connections = new Set<AgentConnection>()
  const perUser = new Map<string, number>()
  const reservationTimeoutMs = options.reservationTimeoutMs ?? 10_000
  let heartbeat: ReturnType<typeof setInterval> | undefined

  function unreserve(userId: string) {
    const left = (perUser.get(userId) ?? 1) - 1
    if (left > 0) perUser.set(userId, left)
    else perUser.delete(userId)
  }

  function sweep() {
    const now = Date.now()
    for (const connection of connections) {
      if (now - connection.lastSeen <= settings.idleTimeoutMs) {
        connection.socket.ping()
        continue
      }
      // Silent for too long: a close frame first; a peer that cannot even take that is cut off next time.
      if (connection.closing) connection.socket.terminate()
      else {
        connection.closing = true
        connection.socket.close(CLOSE_IDLE, 'idle timeout')
      }
    }
  }

  function refuse(connection: AgentConnection, error: ProtocolError) {
    connection.send({ type: 'error', ...error })
    if (BAD_MESSAGE_CODES.has(error.code) && connection.countBad(settings.maxBadMessages, Date.now()) && !connection.closing) {
      connection.closing = true
      connection.socket.close(CLOSE_POLICY, 'too many bad messages')
    }
  }

  /** Sends the task's messages after `afterSeq` to the connection, then the live ones. */
  function listenerFor(connection: AgentConnection, taskId: string) {
    return (text: string, _seq: number, final: boolean) => {
      connection.socket.sendText(text)
      if (final) connection.follows?.delete(taskId)
    }
  }

  async function command(connection: AgentConnection, message: Extract<ClientMessage, { type: 'agent_command' }>) {
    const checked = checkCommand(message.id, message.command, message.params)
    if (!checked.ok) return refuse(connection, checked.error)
    const problem = paramsProblem(checked.command, checked.params)
    if (problem) return refuse(connection, { code: 'invalid_message', id: message.id, field: 'params', message: problem })
    const key = `user:${connection.caller.userId}`
    const checks: RateCheck[] = options.rateLimit.policies.map((policy) => ({ key, policy }))
    const decision = await options.rateLimit.limiter.check(checks)
    if (!decision.allowed)
      return connection.send({
        type: 'error',
        id: message.id,
        code: 'rate_limited',
        message: `Rate limit "${decision.refusedBy}" exceeded; retry in ${decision.retryAfterSeconds} s`,
        retryAfterSeconds: decision.retryAfterSeconds,
      })
    const taskId = agents.start(connection.caller, checked.command, checked.params, message.id)
    // The ack promises the task can be followed from any process, so it waits for the shared log.
    await agents.recorded(taskId)
    const { stop } = await agents.follow(connection.caller, taskId, 0, listenerFor(connection, taskId))
    connection.follow(taskId, stop)
  }

  async function handle(connection: AgentConnection, message: ClientMessage) {
    switch (message.type) {
      case 'ping':
        return connection.send({ type: 'pong', ...(message.id === undefined ? {} : { id: message.id }), time: Date.now() })
      case 'agent_command':
        return command(connection, message)
      case 'subscribe': {
        const { stop } = await agents.follow(connection.caller, message.taskId, message.afterSeq ?? 0, listenerFor(connection, message.taskId), (meta) =>
          connection.send({ type: 'subscribed', id: message.id, taskId: meta.taskId, command: meta.command, status: meta.status, lastSeq: meta.lastSeq }),
        )
        return connection.follow(message.taskId, stop)
      }
      case 'unsubscribe':
        connection.unfollow(message.taskId)
        return connection.send({ type: 'unsubscribed', id: message.id, taskId: message.taskId })
      case 'cancel': {
        const cancelled = await agents.cancel(connection.caller, message.taskId)
        if (!cancelled) return connection.send({ type: 'error', id: message.id, taskId: message.taskId, code: 'task_finished', message: 'The task has already ended' })
        return connection.send({ type: 'cancelling', id: message.id, taskId: message.taskId })
      }
    }
  }

  return {
    get size() {
      return connections.size
    },

    /** Slots the user holds: open connections and reservations not yet claimed or released. */
    slotsHeld(userId: string): number {
      return perUser.get(userId) ?? 0
    },

    /**
     * One more connection slot for the user, or undefined when they hold the most allowed. The caller claims it when
     * the socket opens or releases it when the upgrade fails; left alone, it is given back after the timeout.
     */
    reserve(userId: string): SlotReservation | undefined {
      const count = perUser.get(userId) ?? 0
      if (count >= settings.maxConnectionsPerUser) return undefined
      perUser.set(userId, count + 1)
      let pending = true
      const expiry = setTimeout(() => end(false), reservationTimeoutMs)
      expiry.unref?.()
      function end(opened: boolean): boolean {
        if (!pending) return false
        pending = false
        clearTimeout(expiry)
        if (!opened) unreserve(userId)
        return true
      }
      return { claim: () => end(true), release: () => void end(false) }
    },

    open(socket: AgentSocket, caller: AgentCaller): AgentConnection {
      const connection = new AgentConnection(socket, caller)
      connections.add(connection)
      heartbeat ??= setInterval(sweep, settings.heartbeatIntervalMs)
      return connection
    },

    /** A frame from the client: raw text or bytes, or the value the framework parsed from it. */
    receive(connection: AgentConnection, frame: unknown): void {
      connection.lastSeen = Date.now()
      const decoded = decodeClientMessage(frame, settings.maxMessageBytes)
      if (!decoded.ok) return refuse(connection, decoded.error)
      const id = decoded.message.id
      handle(connection, decoded.message).catch((err: unknown) => {
        if (err instanceof TaskError || err instanceof AppError)
          return connection.send({ type: 'error', id, code: err.code, message: err.message, ...(err.code === 'unavailable' ? { retryAfterSeconds: 2 } : {}) })
        logger.error('agent message failed', { err, type: decoded.message.type })
        connection.send({ type: 'error', id, code: 'internal_error', message: 'The server failed to handle the message' })
      })
    },

    pong(connection: AgentConnection): void {
      connection.lastSeen = Date.now()
    },

    close(connection: AgentConnection): void {
      if (!connections.delete(connection)) return
      connection.release()
      unreserve(connection.caller.userId)
      if (connections.size === 0 && heartbeat) {
        clearInterval(heartbeat)
        heartbeat = undefined
      }
    },

    /** On shutdown: closes every connection with 1001, which tells clients to reconnect (to another process) and subscribe again. */
    closeForShutdown(): void {
      for (const connection of connections) connection.socket.close(CLOSE_GOING_AWAY, 'server shutting down; reconnect and subscribe')
    },
  }
}

export type ConnectionHub = ReturnType<typeof createConnectionHub>
