/** The agents' slice of the configuration: limits of the WebSocket connections, of the tasks they start and of development workspaces. */
import { defineSettings, integer } from '../../src/config.ts'

export const agentsSettings = defineSettings({
  title: 'Agents',
  variables: {
    AGENT_MAX_CONNECTIONS_PER_USER: {
      doc: 'Agent WebSocket connections one user may hold open in one process; more are refused with 429',
      parse: integer(1, 10_000),
      fallback: 20,
    },
    AGENT_MAX_MESSAGE_BYTES: {
      doc: 'Largest agent WebSocket message taken; a larger one gets an error message (frames over 4 times this close the connection with 1009)',
      parse: integer(1024, 16 * 1024 * 1024),
      fallback: 65_536,
    },
    AGENT_MAX_BAD_MESSAGES: {
      doc: 'Malformed, oversize or unknown messages one agent connection may send in a minute before it is closed with 1008',
      parse: integer(1, 10_000),
      fallback: 10,
    },
    AGENT_HEARTBEAT_INTERVAL_MS: { doc: 'How often the server pings each agent connection', parse: integer(100, 600_000), fallback: 15_000 },
    AGENT_IDLE_TIMEOUT_MS: {
      doc: 'An agent connection from which nothing (not even a pong) arrived for this long is closed',
      parse: integer(200, 3_600_000),
      fallback: 45_000,
    },
    AGENT_TASK_RETENTION_SECONDS: {
      doc: 'How long a finished agent task and its messages stay readable for subscribe and status',
      parse: integer(1, 7 * 86_400),
      fallback: 3600,
    },
    AGENT_TASK_TIMEOUT_SECONDS: { doc: 'Longest an agent task may run before it fails with task_timeout', parse: integer(5, 86_400), fallback: 600 },
    AGENT_MAX_TASKS_KEPT_PER_USER: {
      doc: 'Finished agent tasks kept per user in one process within the retention time; the oldest go first',
      parse: integer(1, 10_000_000),
      fallback: 1000,
    },
    AGENT_MAX_RUNNING_TASKS_PER_USER: {
      doc: 'Agent tasks one user may have running at once; more are refused with too_many_tasks',
      parse: integer(1, 10_000),
      fallback: 10,
    },
    AGENT_WORKSPACE_MAX_FILES: {
      doc: "Files a development task's workspace may hold (the import's and those written), and as many directories; more fail the task with workspace_limit",
      parse: integer(1, 1_000_000),
      fallback: 5000,
    },
    AGENT_WORKSPACE_MAX_BYTES: {
      doc: "Bytes a development task's workspace may hold; also the largest file a command in it may write. Run as root, each workspace is a filesystem of this size (plus a block per file and directory allowed, and 8 MiB) that commands cannot write past",
      parse: integer(1024, 64 * 1024 * 1024 * 1024),
      fallback: 200 * 1024 * 1024,
    },
    AGENT_DEVELOP_MAX_STEPS: {
      doc: 'Tool calls one develop task may make before it stops and hands back what it has',
      parse: integer(1, 10_000),
      fallback: 50,
    },
    AGENT_DEVELOP_MAX_TOKENS: { doc: 'Model tokens (in and out) one develop task may spend', parse: integer(1000, 100_000_000), fallback: 1_000_000 },
    AGENT_DEVELOP_TIME_LIMIT_SECONDS: {
      doc: "Wall time of a develop task's model loop; its checks then run once more (keep it below AGENT_TASK_TIMEOUT_SECONDS)",
      parse: integer(5, 86_400),
      fallback: 480,
    },
  },
  build: (v) => ({
    agents: {
      maxConnectionsPerUser: v.AGENT_MAX_CONNECTIONS_PER_USER,
      maxMessageBytes: v.AGENT_MAX_MESSAGE_BYTES,
      maxBadMessages: v.AGENT_MAX_BAD_MESSAGES,
      heartbeatIntervalMs: v.AGENT_HEARTBEAT_INTERVAL_MS,
      idleTimeoutMs: v.AGENT_IDLE_TIMEOUT_MS,
      taskRetentionSeconds: v.AGENT_TASK_RETENTION_SECONDS,
      taskTimeoutSeconds: v.AGENT_TASK_TIMEOUT_SECONDS,
      maxRunningTasksPerUser: v.AGENT_MAX_RUNNING_TASKS_PER_USER,
      maxTasksKeptPerUser: v.AGENT_MAX_TASKS_KEPT_PER_USER,
      workspace: { maxFiles: v.AGENT_WORKSPACE_MAX_FILES, maxBytes: v.AGENT_WORKSPACE_MAX_BYTES },
      develop: { maxSteps: v.AGENT_DEVELOP_MAX_STEPS, maxTokens: v.AGENT_DEVELOP_MAX_TOKENS, timeLimitMs: v.AGENT_DEVELOP_TIME_LIMIT_SECONDS * 1000 },
    },
  }),
})
