/**
 * Tools that come from outside the service (the tools of an organisation's MCP servers), offered to a model loop
 * beside the caller's own. The loop's caller asks for the set a user may use, adds its definitions to the loop's,
 * and runs a call whose name the set `has` through it. The set decides everything else: which tools are offered
 * (allow lists, connections), checking the arguments, timeouts, size caps and the audit trail.
 */
import type { Caller } from '../auth/caller.ts'
import type { ModelTool } from './provider.ts'

/** What one call answered. Never throws for a tool's own failure: `isError` says so and `text` says why. */
export interface ExtraToolResult {
  /** What the model reads (already capped and marked as untrusted data). */
  text: string
  /** What a UI shows as the tool's output: JSON, never HTML to render. */
  output: Record<string, unknown>
  isError: boolean
}

export interface ExtraToolSet {
  /** Function definitions as the model sees them; names are namespaced (`mcp__<server>__<tool>`). */
  readonly definitions: ModelTool[]
  has(name: string): boolean
  /** Runs one call; a name the set does not offer is refused (an error result), never run. */
  call(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<ExtraToolResult>
}

export interface ExtraTools {
  /**
   * The tools `caller` may use now. `servers` names which sources to offer (by name); without it the ones the
   * organisation offers by default.
   */
  forCaller(caller: Caller, selection?: { servers?: readonly string[] }): Promise<ExtraToolSet>
}

/** A set offering nothing. */
export const NO_EXTRA_TOOLS: ExtraToolSet = {
  definitions: [],
  has: () => false,
  call: async (name) => ({ text: `Error: unknown tool ${name}`, output: { error: `unknown tool ${name}` }, isError: true }),
}
