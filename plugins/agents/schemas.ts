/**
 * The agent WebSocket protocol: every message is one JSON object with a `type`. These schemas validate what
 * clients send, describe what the server sends, and are served as one JSON Schema document.
 */
import { t, type Static, type TSchema } from 'elysia'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

export const PROTOCOL_VERSION = 'agent.v1'

export const TASK_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const
export type TaskStatus = (typeof TASK_STATUSES)[number]
export const FINISHED_STATUSES: readonly TaskStatus[] = ['succeeded', 'failed', 'cancelled']

const clientId = t.Optional(
  t.String({
    minLength: 1,
    maxLength: 128,
    description: 'Chosen by the client; echoed in the direct reply (ack, subscribed, pong, error) so replies can be matched',
  }),
)
const taskId = t.String({ minLength: 1, maxLength: 64, description: 'Task id from the ack' })
const importId = t.String({ minLength: 1, maxLength: 100, description: 'A succeeded repository import of your organisation (POST /api/codehost/import)' })

export const debugParams = strictObject(
  {
    code: t.Optional(t.String({ maxLength: 100_000, description: 'The faulty program (TypeScript, JavaScript or Python)' })),
    error: t.Optional(t.String({ maxLength: 20_000, description: 'The error message or stack trace seen' })),
    language: t.Optional(oneOf(['typescript', 'javascript', 'python'] as const, { description: 'Language of code. Default typescript' })),
    tests: t.Optional(
      t.String({
        maxLength: 50_000,
        description: 'Tests the fix must pass: bun tests importing from "./main", or for Python unittest tests importing from main',
      }),
    ),
    importId: t.Optional(importId),
    question: t.Optional(t.String({ maxLength: 4000, description: 'What the code should do, in your words' })),
  },
  { description: 'Give code, error or both. With importId the repository is searched for code related to the error' },
)
export type DebugParams = Static<typeof debugParams>

export const analyzeParams = strictObject({ importId }, { description: 'Summarise an imported repository' })
export const indexParams = strictObject({ importId }, { description: "Rebuild the repository's search index from the import's commit" })
export const statusParams = strictObject(
  { taskId: t.Optional(taskId) },
  { description: 'One task of yours by id, or without taskId your recent tasks and this connection' },
)

export const developParams = strictObject(
  {
    importId: t.Optional(importId),
    instruction: t.String({ minLength: 1, maxLength: 20_000, description: 'What to change or build, in your words' }),
    checks: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 1000 }), {
        maxItems: 10,
        description: "Command lines that must pass (run in the sandbox, in the workspace), for example `bun test`; each one's last verdict is in the result",
      }),
    ),
    branch: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 100,
        pattern: '^(?!.*\\.\\.)(?!.*//)(?!/)(?!.*/$)(?!.*\\.lock$)[A-Za-z0-9._/-]+$',
        description: "Branch the change is committed on in the workspace's repository. Default agent/<task id>",
      }),
    ),
    push: t.Optional(
      t.Boolean({
        description:
          "Push the change as that new branch to the import's repository on the code host with the user's connection, and open a pull request into the imported branch; its URL is in the result (pullRequest). " +
          'Only when every check passes (otherwise the result says why in pushRefused); a branch the repository has already is refused before any work (branch_exists)',
      }),
    ),
    draft: t.Optional(
      t.Boolean({
        description: 'With push: open the pull request as a draft, even over failing checks; its body lists each check with its verdict. Default false',
      }),
    ),
  },
  {
    description:
      "Change code in a private workspace: the import's files at its commit (or, without importId, an empty project), with the model using tools to read, edit and run commands. " +
      'The result carries the unified diff, the files changed, the last verdict of each check and the summary',
  },
)
export type DevelopParams = Static<typeof developParams>

export const buildSiteParams = strictObject(
  {
    instruction: t.String({ minLength: 1, maxLength: 20_000, description: 'The site to build, in your words' }),
    repository: t.String({ minLength: 3, maxLength: 140, description: 'owner/name on GitHub to publish to (created on the connected account when missing)' }),
    branch: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Branch Pages serves. Default gh-pages' })),
    customDomain: t.Optional(t.String({ minLength: 3, maxLength: 253, description: 'Custom domain, written as CNAME' })),
  },
  {
    description:
      'Build a multi-file static site in a new workspace with the model using tools, check it (every page balanced, every local link and asset present), ' +
      'then publish it to GitHub Pages with the connected account; the result carries the URL the Pages API reports',
  },
)
export type BuildSiteParams = Static<typeof buildSiteParams>

export const continueParams = strictObject(
  {
    taskId: t.String({
      minLength: 1,
      maxLength: 64,
      description: 'The develop task (or an earlier follow-up) to go on from; it must have ended, and its workspace not have expired',
    }),
    message: t.String({ minLength: 1, maxLength: 20_000, description: 'What to do now, in your words: the earlier conversation is the context' }),
    checks: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 1000 }), { maxItems: 10, description: "Command lines that must pass; default the earlier task's checks" }),
    ),
    branch: developParams.properties.branch,
    push: developParams.properties.push,
    draft: developParams.properties.draft,
  },
  {
    description:
      'Continue an ended develop task with a follow-up instruction: the same workspace (taken over from that task, whose own workspace reads then answer 404) and the earlier ' +
      'conversation as context (condensed past a budget); the result is a develop result, its diff against the original base',
  },
)
export type ContinueParams = Static<typeof continueParams>

export const COMMAND_PARAMS = {
  debug: debugParams,
  analyze: analyzeParams,
  index: indexParams,
  status: statusParams,
  develop: developParams,
  build_site: buildSiteParams,
  continue: continueParams,
} as const
export type CommandName = keyof typeof COMMAND_PARAMS
export const COMMANDS = Object.keys(COMMAND_PARAMS) as CommandName[]

/** A command's params as a plain JSON Schema object (names, types, descriptions), for a model's tool definition; undefined for an unknown command. */
export function commandParamsSchema(command: string): Record<string, unknown> | undefined {
  if (!Object.hasOwn(COMMAND_PARAMS, command)) return undefined
  return JSON.parse(JSON.stringify(COMMAND_PARAMS[command as CommandName])) as Record<string, unknown>
}

export const agentCommand = strictObject({
  type: t.Literal('agent_command'),
  id: clientId,
  command: t.String({ minLength: 1, maxLength: 64, description: `One of ${COMMANDS.join(', ')}` }),
  params: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'Parameters of the command (see the params schemas)' })),
})
export const cancelMessage = strictObject({ type: t.Literal('cancel'), id: clientId, taskId })
export const subscribeMessage = strictObject({
  type: t.Literal('subscribe'),
  id: clientId,
  taskId,
  afterSeq: t.Optional(integer({ minimum: 0, description: 'The last seq seen; messages after it are replayed. Default 0 (all)' })),
})
export const unsubscribeMessage = strictObject({ type: t.Literal('unsubscribe'), id: clientId, taskId })
export const pingMessage = strictObject({ type: t.Literal('ping'), id: clientId })

export const CLIENT_MESSAGES = {
  agent_command: agentCommand,
  cancel: cancelMessage,
  subscribe: subscribeMessage,
  unsubscribe: unsubscribeMessage,
  ping: pingMessage,
} as const
export type ClientMessageType = keyof typeof CLIENT_MESSAGES
export type ClientMessage = { [K in ClientMessageType]: Static<(typeof CLIENT_MESSAGES)[K]> }[ClientMessageType]

const seq = integer({ minimum: 1, description: "Position in the task's message log, from 1; subscribe with the last one seen to get what was missed" })
const status = oneOf(TASK_STATUSES)

export const SERVER_MESSAGES = {
  ack: t.Object(
    { type: t.Literal('ack'), id: clientId, taskId, seq, command: t.String(), status },
    { description: 'The command was accepted as a task (first message of its log)' },
  ),
  progress: t.Object(
    {
      type: t.Literal('progress'),
      taskId,
      seq,
      status,
      step: t.Optional(t.String({ description: 'What the task is doing now' })),
      stepIndex: t.Optional(integer({ minimum: 0 })),
      steps: t.Optional(
        integer({ minimum: 1, description: 'Steps known or expected so far; it can change once a plan is made or as the task learns its pace' }),
      ),
      percent: t.Optional(integer({ minimum: 0, maximum: 100 })),
      eta: t.Optional(t.String({ description: 'Time left as a short duration (45s, 2m, 1h5m), from the steps left and how long finished steps took' })),
    },
    { description: 'Status changes and steps' },
  ),
  log: t.Object(
    { type: t.Literal('log'), taskId, seq, level: oneOf(['info', 'warn'] as const), message: t.String() },
    { description: 'A line of what the agent did' },
  ),
  result: t.Object(
    { type: t.Literal('result'), taskId, seq, status: t.Literal('succeeded'), output: t.Unknown({ description: "The command's output" }) },
    { description: 'Last message of a succeeded task' },
  ),
  error: t.Object(
    {
      type: t.Literal('error'),
      id: clientId,
      taskId: t.Optional(taskId),
      seq: t.Optional(seq),
      status: t.Optional(oneOf(['failed', 'cancelled'] as const)),
      code: t.String({ description: 'Stable error code' }),
      message: t.String(),
      retryAfterSeconds: t.Optional(integer()),
      commands: t.Optional(t.Array(t.String(), { description: 'With unknown_command: the known commands' })),
      field: t.Optional(t.String({ description: 'With invalid_message: the first field at fault' })),
      resumedAs: t.Optional(
        t.String({ description: "With task_interrupted on a develop task: the task that goes on from this one's last completed step, to subscribe to" }),
      ),
    },
    { description: 'With taskId and seq: the last message of a failed or cancelled task. Without: the answer to one client message' },
  ),
  subscribed: t.Object(
    { type: t.Literal('subscribed'), id: clientId, taskId, command: t.String(), status, lastSeq: integer({ minimum: 0 }) },
    { description: 'Answer to subscribe; the missed messages (seq > afterSeq) follow, then live ones' },
  ),
  unsubscribed: t.Object({ type: t.Literal('unsubscribed'), id: clientId, taskId }),
  cancelling: t.Object(
    { type: t.Literal('cancelling'), id: clientId, taskId },
    { description: "Answer to cancel; the task's own log ends with error status cancelled" },
  ),
  pong: t.Object({ type: t.Literal('pong'), id: clientId, time: integer({ description: 'Server time, ms since the epoch' }) }),
} as const
export type ServerMessageType = keyof typeof SERVER_MESSAGES

/** Error codes of the messages (not HTTP) part of the protocol. */
export const MESSAGE_ERROR_CODES = {
  invalid_json: 'The message is not a JSON object',
  message_too_large: 'The message is larger than AGENT_MAX_MESSAGE_BYTES',
  unknown_type: 'The type is not one of the client message types',
  invalid_message: 'A field is missing or has the wrong type; field names it',
  unknown_command: 'The command is not one of the known commands, listed in commands',
  rate_limited: 'The chat budget is spent; retryAfterSeconds says when to retry',
  too_many_tasks: 'AGENT_MAX_RUNNING_TASKS_PER_USER tasks are already running',
  task_not_found: 'No task of yours with this id (or it expired)',
  not_configured: 'The command needs a part the server has not configured (the model provider)',
  not_found: 'The import named in params is not one of your organisation',
  import_not_ready: 'The import named in params has not succeeded',
  task_failed: 'The task failed; message says why',
  workspace_limit: 'The workspace would hold more files or bytes than AGENT_WORKSPACE_MAX_FILES or AGENT_WORKSPACE_MAX_BYTES allow',
  task_cancelled: 'The task was cancelled',
  task_timeout: 'The task ran longer than AGENT_TASK_TIMEOUT_SECONDS',
  task_interrupted: 'The process running the task stopped',
  task_finished: 'Cancel came after the task had already ended',
  task_running: 'continue named a task that has not ended yet',
  invalid_token: 'The sign-in the connection was opened with ended (signed out, token expired, user removed); the connection closes with 4401',
  forbidden: "The user's role no longer allows agents:run; the connection closes with 4403",
  conversation_not_found: 'continue named a task that kept no conversation (it ended before its model loop began)',
  workspace_not_found: "The task's workspace is gone: expired (AGENT_TASK_RETENTION_SECONDS) or taken over by a continue",
  branch_exists: 'develop or continue with push named a branch the repository has already',
  unavailable: 'Redis, which holds the task logs, cannot be reached; retryAfterSeconds says when to retry',
  internal_error: 'The server failed to handle the message',
} as const

/** The whole protocol as one JSON Schema document (2020-12), served at GET /api/agents/protocol. */
export function protocolSchema(): Record<string, unknown> {
  const strip = (schema: TSchema) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
  const defs: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(CLIENT_MESSAGES)) defs[`client.${name}`] = strip(schema)
  for (const [name, schema] of Object.entries(SERVER_MESSAGES)) defs[`server.${name}`] = strip(schema)
  for (const [name, schema] of Object.entries(COMMAND_PARAMS)) defs[`params.${name}`] = strip(schema)
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `urn:realtime-ai-backend:${PROTOCOL_VERSION}`,
    title: `Agent WebSocket protocol (${PROTOCOL_VERSION})`,
    description:
      'GET /ws/agent upgrades to a WebSocket (scope agents:run; token in Authorization or as the subprotocol pair ["bearer", token]). ' +
      'Each text frame is one JSON object; clientMessage is what a client may send, serverMessage what it receives.',
    clientMessage: { oneOf: Object.keys(CLIENT_MESSAGES).map((name) => ({ $ref: `#/$defs/client.${name}` })) },
    serverMessage: { oneOf: Object.keys(SERVER_MESSAGES).map((name) => ({ $ref: `#/$defs/server.${name}` })) },
    commands: Object.fromEntries(COMMANDS.map((name) => [name, { $ref: `#/$defs/params.${name}` }])),
    errorCodes: MESSAGE_ERROR_CODES,
    closeCodes: {
      1000: 'Normal closure',
      1001: 'The server is shutting down; reconnect (to another process) and subscribe to your tasks',
      1008: 'Too many bad messages (AGENT_MAX_BAD_MESSAGES a minute)',
      1009: 'A frame larger than 4 × AGENT_MAX_MESSAGE_BYTES',
      4000: 'No message or pong within AGENT_IDLE_TIMEOUT_MS',
      4401: 'The sign-in ended: a logout or a revoked session, the token expired, or the user was removed; sign in and connect again',
      4403: "The user's role no longer allows agents:run",
    },
    $defs: defs,
  }
}
