/**
 * run_command as a shell session: each command runs in a new sandboxed `/bin/sh`, but starts where the last one
 * ended (its working directory) with what it exported. The command is wrapped: the saved environment (`export -p`
 * as the shell printed it) and directory are restored, the command runs (through `eval`, so a syntax error in it
 * cannot swallow the rest), then a random per-call marker is printed followed by `pwd -P` and `export -p`. The host
 * only cuts that tail off the output and keeps it as text for the next command: it never runs or interprets it.
 * A directory is kept only inside the workspace's mount; an environment too large to carry on a command line is
 * dropped. A command that exits the shell or is killed leaves the session as it was.
 *
 * Every answer states how the command ended, the time it took against the limit, and any cut of its output.
 */
import type { SandboxResult } from '../../../src/sandbox/index.ts'
import { count, cutMiddle, seconds } from './text.ts'

/** Where the sandbox mounts the workspace (SANDBOX_DIR of src/sandbox): the session's directory stays inside it. */
export const WORKSPACE_MOUNT = '/tmp/sandbox'
/** The largest environment carried to the next command (it travels in the command line, whose argument is capped at 128 KiB). */
export const MAX_KEPT_ENVIRONMENT = 32 * 1024

export interface ShellState {
  /** The working directory in the sandbox, when not the workspace's root. */
  cwd?: string
  /** `export -p` as the last command's shell printed it. */
  environment?: string
}

export const shellQuote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`

export const newMarker = () => `__agent_shell_${crypto.randomUUID().replaceAll('-', '')}`

/** The script the sandbox's shell runs for `command` in session `state`. */
export function shellScript(state: ShellState, command: string, marker: string): string {
  const lines: string[] = []
  if (state.environment) {
    // Tried in a subshell first: a syntax error in eval would end the shell, and the command with it.
    const saved = shellQuote(state.environment)
    lines.push(`if (eval ${saved}) >/dev/null 2>&1; then eval ${saved}; else echo '[shell: the saved environment could not be restored]' >&2; fi`)
  }
  if (state.cwd) {
    const where = state.cwd.slice(WORKSPACE_MOUNT.length + 1)
    lines.push(`cd ${shellQuote(state.cwd)} 2>/dev/null || echo ${shellQuote(`[shell: ${where} is gone; this command runs in the workspace root]`)} >&2`)
  }
  lines.push(
    `eval ${shellQuote(command)}`,
    '__agent_status=$?',
    `printf '\\n%s\\n' ${marker}`,
    'pwd -P 2>/dev/null',
    `printf '%s\\n' ${marker}:env`,
    'export -p',
    `printf '%s\\n' ${marker}:end`,
    'exit $__agent_status',
  )
  return lines.join('\n')
}

/**
 * The command's own output (the tail cut off) and the session it leaves: undefined fields when the tail is missing
 * (the shell exited or was killed), so the session stays as it was.
 */
export function readShellTail(output: string, marker: string): { output: string; cwd?: string; environment?: string } {
  const start = output.lastIndexOf(`\n${marker}\n`)
  if (start < 0) return { output }
  const envStart = output.indexOf(`\n${marker}:env\n`, start)
  const end = envStart < 0 ? -1 : output.indexOf(`${marker}:end\n`, envStart + 1)
  if (envStart < 0 || end < 0) return { output: output.slice(0, start) }
  const cwd = output.slice(start + marker.length + 2, envStart)
  const environment = output.slice(envStart + marker.length + 6, end)
  // Whatever a leftover background process printed after the tail is the command's output too.
  return { output: output.slice(0, start) + output.slice(end + marker.length + 5), cwd, environment }
}

/**
 * Takes what a command left into `state`, and answers notes for the model (a directory outside the workspace, an
 * environment too large to keep).
 */
export function carryOver(state: ShellState, tail: { cwd?: string; environment?: string }): string[] {
  const notes: string[] = []
  if (tail.cwd === '') {
    // pwd failed: the command removed its own working directory.
    notes.push('[shell: the working directory is gone; the next command starts in the workspace root]')
    state.cwd = undefined
  } else if (tail.cwd !== undefined) {
    const inside = !tail.cwd.includes('\n') && (tail.cwd === WORKSPACE_MOUNT || tail.cwd.startsWith(`${WORKSPACE_MOUNT}/`))
    if (!inside) notes.push(`[shell: the command ended in ${tail.cwd.split('\n')[0]}, outside the workspace; the next command starts in the workspace root]`)
    state.cwd = inside && tail.cwd !== WORKSPACE_MOUNT ? tail.cwd : undefined
  }
  if (tail.environment !== undefined) {
    if (tail.environment.length > MAX_KEPT_ENVIRONMENT) {
      notes.push(
        `[shell: the exported environment (${count(tail.environment.length)} characters) is over ${count(MAX_KEPT_ENVIRONMENT)} and is not kept for the next command]`,
      )
      state.environment = undefined
    } else state.environment = tail.environment
  }
  return notes
}

/** `src/lib` for a session inside it; undefined at the root. */
export const sessionDirectory = (state: ShellState) => state.cwd?.slice(WORKSPACE_MOUNT.length + 1)

/** A limit in seconds: `120`, or `2.5` when it is not whole. */
const limit = (ms: number) => (ms % 1000 === 0 ? count(ms / 1000) : seconds(ms))

/** How a run ended, for the first line of the answer: `exit 1 · 2.3 s (limit 120 s)`, `timeout after 120 s: killed`. */
export function describeEnd(result: SandboxResult, timeoutMs?: number): string {
  const took = `${seconds(result.durationMs)} s${timeoutMs ? ` (limit ${limit(timeoutMs)} s)` : ''}`
  switch (result.verdict) {
    case 'timeout':
      return `timeout after ${timeoutMs ? limit(timeoutMs) : seconds(result.durationMs)} s: killed`
    case 'cancelled':
      return `cancelled after ${seconds(result.durationMs)} s: killed (the task was cancelled or its time budget ran out)`
    case 'memory_limit':
      return `memory_limit: killed after ${took}, over the sandbox's memory limit`
    case 'process_limit':
      return `process_limit: killed after ${took}, over the sandbox's process limit`
    case 'output_limit':
      return `output_limit: killed after ${took}, over the sandbox's output limit`
    default:
      return result.exitCode === null ? `${result.verdict} after ${took}` : `exit ${result.exitCode} · ${took}`
  }
}

/** The whole answer: how it ended, where the session is, what was cut, then the output. */
export function describeRun(
  result: SandboxResult,
  options: { timeoutMs?: number; maxOutputBytes?: number; maxChars: number; directory?: string; notes?: readonly string[] },
): string {
  const first = `${describeEnd(result, options.timeoutMs)}${options.directory ? ` · in ${options.directory}` : ''}`
  const notes = [...(options.notes ?? [])]
  if (result.truncated)
    notes.push(
      `output cut by the sandbox: it keeps ${options.maxOutputBytes ? `the first ${count(options.maxOutputBytes)} bytes` : 'only the start'} of a command's output`,
    )
  const room = Math.max(1000, options.maxChars - first.length - notes.join('\n').length - 200)
  const cut = cutMiddle(result.output, room)
  if (cut.note) notes.push(cut.note)
  const output = result.output === '' ? '(no output)' : cut.text
  return [first, ...notes, output].join('\n')
}
