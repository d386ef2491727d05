/**
 * The open agent connections of this process: what each may do (caller, per-user cap, bad-message budget), the
 * tasks each follows, the heartbeat that pings them all and closes the silent ones, and the handling of every
 * client message. Kept small per connection: 10,000 idle ones must fit in a few KB each.
 */
import { DRAINING_RETRY_AFTER_SECONDS, type Lifecycle } from '../../../src/lifecycle.ts'
import { AppError } from '../../../src/errors.ts'
import type { Logger } from '../../../src/log.ts'
import type { RateCheck, RateLimiter, RatePolicy } from '../../../src/rate-limit/index.ts'
import { checkCommand, decodeClientMessage, type ProtocolError } from './protocol.ts'
import type { ClientMessage } from '../schemas.ts'
import { TaskError, type AgentCaller, type AgentService } from '../tasks/index.ts'

/** What the connection needs of Bun's ServerWebSocket. */
export interface AgentSocket {
  sendText(text: string): number
  ping(data?: string): number
  close(code?: number, reason?: string): void
  terminate(): void
  /** Bun's topic membership: a task's live messages reach every member through one publish. */
  subscribe?(topic: string): void
  unsubscribe?(topic: string): void
}

/** Sends one text to every socket subscribed to a topic (Bun's `server.publish`), natively, in one call. */
export interface TopicPublisher {
  publish(topic: string, text: string): unknown
}

/**
 * A task's messages in this process, for every connection here that follows it: one follower of the task log
 * feeds them, each connection gets the messages after its own `afterSeq` from `messages`, then the live ones.
 * Live messages go out by one topic publish instead of a send per connection.
 */
interface TaskChannel {
  readonly topic: string
  /** The task's messages from seq 1, in order, as delivered so far. */
  readonly messages: { text: string; seq: number }[]
  /** Connections receiving the live messages through the topic. */
  readonly subscribed: Set<AgentConnection>
  /** Connections whose socket has no topics, sent to one by one. */
  readonly direct: Set<AgentConnection>
  /**
   * Connections that asked for messages after a seq this channel has not delivered yet (its replay from the shared
   * log is still arriving), with that seq: each is sent the first message past it, then goes live.
   */
  readonly waiting: Map<AgentConnection, number>
  /** Connections waiting for the channel to open; it is not dropped under them. */
  joining: number
  ended: boolean
  stop?: () => void
  opened: Promise<unknown>
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
  /** Ends connections whose user lost the right to them; without it a connection lives as long as its socket. */
  standing?: ConnectionStanding
  /** How often `standing` is asked, while connections are open. Default 500 ms. */
  standingIntervalMs?: number
  /** Refuses new agent connections and commands while the process drains: the client is sent elsewhere. */
  admission?: Pick<Lifecycle, 'admitLongWork'>
}

/** A connection slot held from the upgrade request to the open socket; it ends exactly once. */
export interface SlotReservation {
  /** The socket opened: the slot becomes the connection's (freed by close). False when the reservation had already ended. */
  claim(): boolean
  /** The upgrade will not end in an open socket: the slot is free again. Does nothing once claimed or released. */
  release(): void
}

export const CLOSE_GOING_AWAY = 1001
const SHUTDOWN_CLOSE_REASON = 'server shutting down; reconnect and subscribe'
export const CLOSE_POLICY = 1008
export const CLOSE_IDLE = 4000
/** The sign-in the connection was opened with ended: signed out, its token expired, or the user removed. */
export const CLOSE_SIGNED_OUT = 4401
/** The user may no longer run agents (a role without agents:run). */
export const CLOSE_NOT_ALLOWED = 4403

/** The sign-in a connection was opened with, checked again while it stays open. */
export interface ConnectionGrant {
  sessionId?: string
  /** Epoch ms at which the token it was opened with expires. */
  expiresAt?: number
}

/** Why a connection must end now: a close code and a reason. */
export interface Revocation {
  code: typeof CLOSE_SIGNED_OUT | typeof CLOSE_NOT_ALLOWED
  reason: string
}

/**
 * How the hub learns that a connection's user lost the right to it: the token's own state, checked as often as the
 * hub looks, and the users' standing (removed, or their role changed), read for every connected user at once.
 */
export interface ConnectionStanding {
  ended(grant: ConnectionGrant, now: number): Revocation | undefined
  lost(userIds: readonly string[]): Promise<Map<string, Revocation>>
}

const BAD_WINDOW_MS = 60_000
/** Followers of an ended task taken out of its topic per event-loop turn: a few ms of work each. */
const TOPIC_LEAVE_SLICE = 256

export class AgentConnection {
  lastSeen = Date.now()
  closing = false
  /** Its user lost the right to it: closing, and nothing it sends is handled. */
  revoked = false
  private badCount = 0
  private badWindowStart = 0
  /** Tasks this connection follows, with the function that stops following. */
  follows: Map<string, () => void> | undefined

  constructor(
    readonly socket: AgentSocket,
    readonly caller: AgentCaller,
    readonly grant: ConnectionGrant = {},
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
  let standingTimer: ReturnType<typeof setInterval> | undefined
  let checkingUsers = false

  function revoke(connection: AgentConnection, revocation: Revocation) {
    if (connection.revoked) return
    connection.revoked = true
    connection.closing = true
    connection.send({ type: 'error', code: revocation.code === CLOSE_NOT_ALLOWED ? 'forbidden' : 'invalid_token', message: revocation.reason })
    connection.socket.close(revocation.code, revocation.reason)
  }

  /** Every open connection whose token ended or whose user lost the right is closed; users are read once a second. */
  let tick = 0
  async function checkStanding() {
    const standing = options.standing!
    const now = Date.now()
    for (const connection of connections) {
      const ended = standing.ended(connection.grant, now)
      if (ended) revoke(connection, ended)
    }
    if (tick++ % 2 !== 0 || checkingUsers || connections.size === 0) return
    checkingUsers = true
    try {
      const lost = await standing.lost([...perUser.keys()])
      if (lost.size > 0)
        for (const connection of connections) {
          const revocation = lost.get(connection.caller.userId)
          if (revocation) revoke(connection, revocation)
        }
    } catch (err) {
      logger.warn('agent connections: the users could not be checked', { err })
    } finally {
      checkingUsers = false
    }
  }

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

  const channels = new Map<string, TaskChannel>()
  // Numbers each channel's topic: a task followed again after its channel ended gets a topic of its own.
  let channelCount = 0
  let publisher: TopicPublisher | undefined

  function deliver(channel: TaskChannel, taskId: string, text: string, seq: number, final: boolean) {
    channel.messages.push({ text, seq })
    if (publisher && channel.subscribed.size > 0) publisher.publish(channel.topic, text)
    for (const connection of channel.direct) connection.socket.sendText(text)
    for (const [connection, afterSeq] of channel.waiting) {
      if (seq <= afterSeq) continue
      connection.socket.sendText(text)
      channel.waiting.delete(connection)
      // Joining the topic after this publish: it gets the next message, not this one again.
      goLive(channel, connection)
    }
    if (!final) return
    channel.ended = true
    for (const connection of [...channel.subscribed, ...channel.direct, ...channel.waiting.keys()]) connection.follows?.delete(taskId)
    leaveTopicInSlices([...channel.subscribed], channel.topic)
    channel.subscribed.clear()
    channel.direct.clear()
    channel.waiting.clear()
    if (channels.get(taskId) === channel) channels.delete(taskId)
  }

  function goLive(channel: TaskChannel, connection: AgentConnection) {
    if (publisher && connection.socket.subscribe) {
      connection.socket.subscribe(channel.topic)
      channel.subscribed.add(connection)
    } else channel.direct.add(connection)
  }

  /**
   * Takes the followers of an ended task out of its topic a slice per turn. Leaving a topic right after a publish
   * writes that socket's share of it there and then (about 10 µs a socket), so all at once would hold the event
   * loop some 100 ms at 10,000 followers. The topic is this channel's alone, so a later channel of the same task
   * is never touched by what is still to leave.
   */
  function leaveTopicInSlices(leaving: AgentConnection[], topic: string, from = 0) {
    const end = Math.min(leaving.length, from + TOPIC_LEAVE_SLICE)
    for (let i = from; i < end; i++) unsubscribe(leaving[i]!, topic)
    if (end < leaving.length) setImmediate(() => leaveTopicInSlices(leaving, topic, end))
  }

  function unsubscribe(connection: AgentConnection, topic: string) {
    try {
      connection.socket.unsubscribe?.(topic)
    } catch {
      // the socket is closed already, and with it its topics
    }
  }

  /** The task's channel here, opened with `caller`'s right to follow it (ownership is checked per joiner too). */
  function channelFor(caller: AgentCaller, taskId: string): TaskChannel {
    const existing = channels.get(taskId)
    if (existing) return existing
    const channel: TaskChannel = {
      topic: `agent-task:${taskId}:${++channelCount}`,
      messages: [],
      subscribed: new Set(),
      direct: new Set(),
      waiting: new Map(),
      joining: 0,
      ended: false,
      opened: Promise.resolve(),
    }
    channels.set(taskId, channel)
    channel.opened = agents
      .follow(caller, taskId, 0, (text, seq, final) => deliver(channel, taskId, text, seq, final))
      .then(
        ({ stop }) => {
          channel.stop = stop
          if (channels.get(taskId) !== channel) stop()
        },
        (err: unknown) => {
          if (channels.get(taskId) === channel) channels.delete(taskId)
          throw err
        },
      )
    return channel
  }

  /** Drops a channel no connection follows: its log follower stops, and its messages are let go. */
  function dropIfUnused(channel: TaskChannel, taskId: string) {
    if (channel.ended || channel.joining > 0 || channel.subscribed.size > 0 || channel.direct.size > 0 || channel.waiting.size > 0) return
    channel.stop?.()
    if (channels.get(taskId) === channel) channels.delete(taskId)
  }

  /** Sends the task's messages after `afterSeq` to the connection, then the live ones, until it ends or is left. */
  async function join(connection: AgentConnection, taskId: string, afterSeq: number) {
    connection.unfollow(taskId)
    const channel = channelFor(connection.caller, taskId)
    channel.joining++
    try {
      await channel.opened
    } finally {
      channel.joining--
    }
    // Nothing is delivered between the replay and joining: both happen here, in one go.
    for (const message of channel.messages) if (message.seq > afterSeq) connection.socket.sendText(message.text)
    if (channel.ended || !connections.has(connection)) return dropIfUnused(channel, taskId)
    const delivered = channel.messages.at(-1)?.seq ?? 0
    if (afterSeq > delivered) channel.waiting.set(connection, afterSeq)
    else goLive(channel, connection)
    connection.follow(taskId, () => {
      channel.subscribed.delete(connection)
      channel.direct.delete(connection)
      channel.waiting.delete(connection)
      unsubscribe(connection, channel.topic)
      dropIfUnused(channel, taskId)
    })
  }

  async function command(connection: AgentConnection, message: Extract<ClientMessage, { type: 'agent_command' }>) {
    try {
      options.admission?.admitLongWork('agent tasks')
    } catch (err) {
      // A draining process takes no new task: the client is told why, then sent to reconnect elsewhere at once.
      const refusal = err as AppError
      connection.send({ type: 'error', id: message.id, code: refusal.code, message: refusal.message, retryAfterSeconds: DRAINING_RETRY_AFTER_SECONDS })
      connection.socket.close(CLOSE_GOING_AWAY, SHUTDOWN_CLOSE_REASON)
      return
    }
    const checked = checkCommand(message.id, message.command, message.params)
    if (!checked.ok) return refuse(connection, checked.error)
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
    await join(connection, taskId, 0)
  }

  async function handle(connection: AgentConnection, message: ClientMessage) {
    switch (message.type) {
      case 'ping':
        return connection.send({ type: 'pong', ...(message.id === undefined ? {} : { id: message.id }), time: Date.now() })
      case 'agent_command':
        return command(connection, message)
      case 'subscribe': {
        const meta = await agents.ownTask(connection.caller, message.taskId)
        connection.send({ type: 'subscribed', id: message.id, taskId: meta.taskId, command: meta.command, status: meta.status, lastSeq: meta.lastSeq })
        return join(connection, message.taskId, message.afterSeq ?? 0)
      }
      case 'unsubscribe':
        connection.unfollow(message.taskId)
        return connection.send({ type: 'unsubscribed', id: message.id, taskId: message.taskId })
      case 'cancel': {
        const cancelled = await agents.cancel(connection.caller, message.taskId)
        if (!cancelled)
          return connection.send({ type: 'error', id: message.id, taskId: message.taskId, code: 'task_finished', message: 'The task has already ended' })
        return connection.send({ type: 'cancelling', id: message.id, taskId: message.taskId })
      }
    }
  }

  return {
    get size() {
      return connections.size
    },

    /** From now on, live task messages go out by topic through `server` (the HTTP server the sockets belong to). */
    useServer(server: TopicPublisher) {
      publisher = server
    },

    /** Slots the user holds: open connections and reservations not yet claimed or released. */
    slotsHeld(userId: string): number {
      return perUser.get(userId) ?? 0
    },

    /**
     * One more connection slot for the user, or undefined when they hold the most allowed. The caller claims it when
     * the socket opens or releases it when the upgrade fails; left alone, it is given back after the timeout.
     */
    /** Throws 503 `unavailable` while the process drains: a client upgrading now is sent to another process. */
    admit(): void {
      options.admission?.admitLongWork('agent connections')
    },

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

    open(socket: AgentSocket, caller: AgentCaller, grant?: ConnectionGrant): AgentConnection {
      const connection = new AgentConnection(socket, caller, grant)
      connections.add(connection)
      heartbeat ??= setInterval(sweep, settings.heartbeatIntervalMs)
      if (options.standing) standingTimer ??= setInterval(() => void checkStanding(), options.standingIntervalMs ?? 500)
      return connection
    },

    /** A frame from the client: raw text or bytes, or the value the framework parsed from it. */
    receive(connection: AgentConnection, frame: unknown): void {
      connection.lastSeen = Date.now()
      // A message sent after the sign-in ended is not handled, whenever the next check would have closed the socket.
      const ended = options.standing?.ended(connection.grant, connection.lastSeen)
      if (ended) {
        revoke(connection, ended)
        return
      }
      if (connection.revoked) return
      const decoded = decodeClientMessage(frame, settings.maxMessageBytes)
      if (!decoded.ok) {
        refuse(connection, decoded.error)
        return
      }
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
      if (connections.size === 0 && standingTimer) {
        clearInterval(standingTimer)
        standingTimer = undefined
      }
    },

    /** On shutdown: closes every connection with 1001, which tells clients to reconnect (to another process) and subscribe again. */
    closeForShutdown(): void {
      for (const connection of connections) connection.socket.close(CLOSE_GOING_AWAY, SHUTDOWN_CLOSE_REASON)
    },
  }
}

export type ConnectionHub = ReturnType<typeof createConnectionHub>
