/** Tools the model can call that run on the server. */
import type { CodeIndex } from '../code-search/index.ts'
import type { WebSearchService } from '../web-search/index.ts'
import type { Emit } from '../../src/llm/ui-stream.ts'
import type { ModelProvider, ModelTool } from '../../src/llm/provider.ts'
import { StreamError } from '../../src/llm/provider.ts'

export const SERVER_TOOL_NAMES = ['web_search', 'code_search', 'generate_image', 'run_agent'] as const
export type ServerToolName = (typeof SERVER_TOOL_NAMES)[number]

export interface ToolContext {
  orgId: string
  userId: string
  emit: Emit
  signal: AbortSignal
}

export interface ServerTool {
  definition: ModelTool
  execute(input: Record<string, unknown>, context: ToolContext): Promise<unknown>
}

/** Agent commands the chat model may run. */
export const AGENT_COMMANDS = ['develop', 'continue', 'build_site', 'analyze', 'debug'] as const

/** Starts and follows agent tasks for the chat (the agents' service, spending the chat budget). */
export interface AgentRunner {
  /** The JSON Schema of a command's params (names, types, descriptions), shown to the model in run_agent's definition. */
  paramsSchema(command: string): Record<string, unknown> | undefined
  /** Checks the params and the caller's chat budget, then starts the task; answers its id. Throws with a message the model can read. */
  start(caller: { orgId: string; userId: string }, command: string, params: Record<string, unknown>): Promise<string>
  /** Follows the task's messages from its first (as sent over /ws/agent); answers how to stop following. */
  follow(caller: { orgId: string; userId: string }, taskId: string, listener: (message: Record<string, unknown>, final: boolean) => void): Promise<() => void>
}

/** The data of a `data-agent` part: one per task, updated in place (same id) as the task goes on. */
export interface AgentPartData {
  taskId: string
  command: string
  step: string | null
  eta: string | null
  status: string
}

/** Largest tool result the model gets back from a task, in characters. */
const MAX_AGENT_RESULT_CHARS = 12_000

export interface ServerToolDependencies {
  webSearch: Pick<WebSearchService, 'search' | 'configured'>
  codeIndex?: Pick<CodeIndex, 'search'>
  provider: ModelProvider
  imageModel: string
  imageMaxBytes: number
  agents?: AgentRunner
}

const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]): ModelTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
})

const text = (input: Record<string, unknown>, field: string): string => {
  const value = input[field]
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${field} must be a non-empty string`)
  return value
}

/** Generates an image and streams it as a `file` chunk; refused above the size limit. */
export async function generateImage(deps: ServerToolDependencies, prompt: string, context: ToolContext) {
  const image = await deps.provider.generateImage({ model: deps.imageModel, prompt }, context.signal)
  if (image.bytes > deps.imageMaxBytes)
    throw new StreamError('image_too_large', `The generated image is ${image.bytes} bytes; the limit is ${deps.imageMaxBytes}`)
  context.emit({ type: 'file', url: image.url, mediaType: image.mediaType })
  return image
}

/** The server tools available with these dependencies (code_search only with an index, web_search only when configured). */
export function serverTools(deps: ServerToolDependencies): Map<ServerToolName, ServerTool> {
  const tools = new Map<ServerToolName, ServerTool>()
  if (deps.webSearch.configured)
    tools.set('web_search', {
      definition: fn(
        'web_search',
        'Search the web for current information. Returns titles, URLs and snippets.',
        { query: { type: 'string', description: 'What to search for' }, count: { type: 'integer', minimum: 1, maximum: 10 } },
        ['query'],
      ),
      async execute(input, context) {
        const count = typeof input.count === 'number' ? Math.min(10, Math.max(1, Math.floor(input.count))) : 5
        const answer = await deps.webSearch.search(text(input, 'query'), { count, caller: { orgId: context.orgId, userId: context.userId } })
        for (const [i, r] of answer.results.entries())
          context.emit({ type: 'source-url', sourceId: `web-${i + 1}-${r.url}`.slice(0, 200), url: r.url, title: r.title })
        return { results: answer.results.map(({ title, url, snippet, publishedAt }) => ({ title, url, snippet, publishedAt })) }
      },
    })
  if (deps.codeIndex) {
    const index = deps.codeIndex
    tools.set('code_search', {
      definition: fn(
        'code_search',
        "Search the code of the user's imported repositories. Returns file paths, line ranges and snippets.",
        { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 20 }, language: { type: 'string' } },
        ['query'],
      ),
      async execute(input, context) {
        const limit = typeof input.limit === 'number' ? Math.min(20, Math.max(1, Math.floor(input.limit))) : 8
        const languages = typeof input.language === 'string' ? [input.language] : undefined
        const results = await index.search({ orgId: context.orgId }, { query: text(input, 'query'), limit, languages, expand: false })
        return {
          results: results.map((r) => ({
            repository: r.repositoryName,
            path: r.path,
            lines: `${r.startLine}-${r.endLine}`,
            snippet: r.snippet,
            score: Number(r.score.toFixed(4)),
          })),
        }
      },
    })
  }
  if (deps.agents) {
    const runner = deps.agents
    tools.set('run_agent', { definition: runAgentDefinition(runner), execute: (input, context) => runAgent(runner, input, context) })
  }
  tools.set('generate_image', {
    definition: fn('generate_image', 'Generate an image from a text description.', { prompt: { type: 'string' } }, ['prompt']),
    async execute(input, context) {
      const image = await generateImage(deps, text(input, 'prompt'), context)
      // The model gets a description, not the image bytes.
      return { generated: true, mediaType: image.mediaType, shownToUser: true }
    },
  })
  return tools
}

/**
 * run_agent as the model sees it: `params` is one JSON Schema per command (oneOf, each titled with its command and
 * carrying its fields' names, types and descriptions), so a model can fill them in without guessing.
 */
function runAgentDefinition(runner: AgentRunner): ModelTool {
  const alternatives = AGENT_COMMANDS.map((command) => {
    const schema = runner.paramsSchema(command) ?? { type: 'object' }
    const about = typeof schema.description === 'string' ? `: ${schema.description}` : ''
    return { ...schema, title: command, description: `params of ${command}${about}` }
  })
  return fn(
    'run_agent',
    'Run an agent task and wait for its result. develop: change code in a private workspace of an imported repository (or a new project), run checks, and get the diff, ' +
      'the check verdicts and, with push, a pull request. continue: go on from an ended develop task (its taskId) with a follow-up message, in the same workspace and conversation. build_site: build a static site and publish it to GitHub Pages, and get its URL. analyze: summarise an imported repository. ' +
      'debug: find and fix the fault in a code snippet. params must follow the schema of the chosen command: the alternative whose title is the command.',
    {
      command: { type: 'string', enum: [...AGENT_COMMANDS], description: 'The agent command to run' },
      params: { description: "The command's parameters: the alternative titled with the command", oneOf: alternatives },
    },
    ['command', 'params'],
  )
}

/**
 * Runs an agent task for the chat: its progress goes out as one `data-agent` part (same id, so a UI redraws it in
 * place), and its result, clipped, is what the model reads. A cancelled chat stops waiting; the task goes on.
 */
async function runAgent(runner: AgentRunner, input: Record<string, unknown>, context: ToolContext): Promise<unknown> {
  const command = input.command
  if (typeof command !== 'string' || !(AGENT_COMMANDS as readonly string[]).includes(command))
    throw new Error(`command must be one of ${AGENT_COMMANDS.join(', ')}`)
  const params = input.params ?? {}
  if (!params || typeof params !== 'object' || Array.isArray(params)) throw new Error('params must be an object')
  const caller = { orgId: context.orgId, userId: context.userId }
  const taskId = await runner.start(caller, command, params as Record<string, unknown>)
  const part: AgentPartData = { taskId, command, step: null, eta: null, status: 'queued' }
  const show = (change: Partial<AgentPartData>) => {
    Object.assign(part, change)
    context.emit({ type: 'data-agent', id: `agent-${taskId}`, data: { ...part } })
  }
  show({})
  context.signal.throwIfAborted()
  return new Promise((resolve, reject) => {
    let stop: (() => void) | undefined
    let ended = false
    const end = () => {
      ended = true
      stop?.()
      context.signal.removeEventListener('abort', onAbort)
    }
    const onAbort = () => {
      end()
      reject(context.signal.reason)
    }
    context.signal.addEventListener('abort', onAbort, { once: true })
    runner
      .follow(caller, taskId, (message, final) => {
        if (ended) return
        if (message.type === 'progress')
          show({
            status: typeof message.status === 'string' ? message.status : part.status,
            ...(typeof message.step === 'string' ? { step: message.step } : {}),
            eta: typeof message.eta === 'string' ? message.eta : null,
          })
        if (!final) return
        end()
        if (message.type === 'result') {
          show({ status: 'succeeded', eta: null })
          resolve({ taskId, status: 'succeeded', output: clipped(message.output) })
        } else {
          const status = message.code === 'task_cancelled' ? 'cancelled' : 'failed'
          show({ status, eta: null })
          resolve({ taskId, status, error: { code: message.code, message: message.message } })
        }
      })
      .then(
        (stopFollowing) => {
          stop = stopFollowing
          if (ended) stopFollowing()
        },
        (err: unknown) => {
          end()
          reject(err)
        },
      )
  })
}

/** The task's output as the model reads it: whole when small, else with the longest text fields (a diff) cut. */
function clipped(output: unknown): unknown {
  if (JSON.stringify(output ?? null).length <= MAX_AGENT_RESULT_CHARS || !output || typeof output !== 'object') return output
  const copy: Record<string, unknown> = { ...(output as Record<string, unknown>) }
  for (const [key, value] of Object.entries(copy))
    if (typeof value === 'string' && value.length > 2000)
      copy[key] = `${value.slice(0, 2000)}\n… (${value.length - 2000} more characters; read the task's diff over the API)`
  const text = JSON.stringify(copy)
  return text.length <= MAX_AGENT_RESULT_CHARS ? copy : { truncated: text.slice(0, MAX_AGENT_RESULT_CHARS) }
}
