/** Tools the model can call that run on the server. */
import type { CodeIndex } from '../code-search/index.ts'
import type { WebSearchService } from '../web-search/index.ts'
import type { Emit } from '../../src/llm/ui-stream.ts'
import type { ModelProvider, ModelTool } from '../../src/llm/provider.ts'
import { StreamError } from '../../src/llm/provider.ts'

export const SERVER_TOOL_NAMES = ['web_search', 'code_search', 'generate_image'] as const
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

export interface ServerToolDependencies {
  webSearch: Pick<WebSearchService, 'search' | 'configured'>
  codeIndex?: Pick<CodeIndex, 'search'>
  provider: ModelProvider
  imageModel: string
  imageMaxBytes: number
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
        answer.results.forEach((r, i) => context.emit({ type: 'source-url', sourceId: `web-${i + 1}-${r.url}`.slice(0, 200), url: r.url, title: r.title }))
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
        const results = await index.search({ orgId: context.orgId }, { query: text(input, 'query'), limit, languages })
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
