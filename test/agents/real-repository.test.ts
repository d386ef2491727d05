/**
 * A develop task on a real repository no one here wrote, driven by a scripted model that chooses each tool by what
 * its description says, never by its name, and reads only what the tools answer: it runs the tests, searches for
 * the error, reads the code around it, finds the function at fault, fixes it, runs the tests again and finishes.
 *
 * The repository is tomli (a TOML parser in Python, tested with unittest). Its checkout is not part of this project:
 * set AGENT_TRY_TOMLI to a checkout of it to run this; the test breaks the upper bound of Unicode in
 * `is_unicode_scalar_value` before importing it, so three of its tests fail.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { CompletionScript } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { agentHarness, importRepository, isFinal, type AgentHarness } from './helpers.ts'

const checkout = process.env.AGENT_TRY_TOMLI
if (!checkout) console.warn('[skip] develop on a real repository: set AGENT_TRY_TOMLI to a checkout of tomli')

const BROKEN_FROM = '(57344 <= codepoint <= 1114111)'
const BROKEN_TO = '(57344 <= codepoint <= 65535)'
const TESTS = 'PYTHONPATH=src python3 -m unittest 2>&1 | tail -25'

interface ToolDefinition {
  function: { name: string; description: string }
}

/** The tool whose description says most of what is wanted: each phrase found counts once. */
function toolFor(tools: ToolDefinition[], wanted: string[]): string {
  const scored = tools.map((tool) => ({
    name: tool.function.name,
    score: wanted.filter((phrase) => tool.function.description.toLowerCase().includes(phrase)).length,
  }))
  scored.sort((a, b) => b.score - a.score)
  if (scored[0]!.score === scored[1]!.score) throw new Error(`no description stands out for ${wanted.join(', ')}: ${JSON.stringify(scored.slice(0, 3))}`)
  return scored[0]!.name
}

const INTENTS = {
  run: ['run a shell command', 'tests', 'stdout'],
  search: ['search', 'text of', 'literal', 'line numbers'],
  read: ['read a text file', 'window', 'line numbers'],
  replace: ['replace', 'exact', 'old_text'],
  end: ['end the task', 'summary', 'reviewer'],
} as const

/**
 * The scripted engineer: each turn looks at what the last tool answered and decides the next call. It knows TOML's
 * one fact that matters here, that Unicode ends at 1114111 (0x10FFFF), and nothing of the repository's layout.
 */
function scriptedEngineer(chosen: string[]) {
  const plan: { intent: keyof typeof INTENTS; args: (answers: string[]) => Record<string, unknown> }[] = [
    { intent: 'run', args: () => ({ command: TESTS }) },
    {
      intent: 'search',
      args: ([tests]) => ({ query: /TOMLDecodeError: (.+?) \(at line/.exec(tests!)![1]! }),
    },
    {
      intent: 'read',
      args: ([, found]) => {
        const [, path, line] = /^(\S+\.py)[^\n]*\n\s*(\d+)[:\s]/m.exec(found!)!
        return { path, start: Math.max(1, Number(line) - 8), lines: 12 }
      },
    },
    { intent: 'search', args: ([, , code]) => ({ query: `def ${/if not (\w+)\(/.exec(code!)![1]!}` }) },
    {
      intent: 'read',
      args: ([, , , found]) => {
        const [, path, line] = /^(\S+\.py)[^\n]*\n\s*(\d+)[:\s]/m.exec(found!)!
        return { path, start: Number(line), lines: 3 }
      },
    },
    {
      intent: 'replace',
      args: ([, , , , code]) => {
        const path = /^(\S+\.py) lines/m.exec(code!)![1]!
        // The numbered line as the file holds it: after the number and the tab.
        const line = code!
          .split('\n')
          .find((l) => /\breturn\b.*codepoint/.test(l))!
          .replace(/^\s*\d+\t/, '')
        const bound = /57344 <= codepoint <= (\d+)/.exec(line)![1]!
        return { path, old_text: line, new_text: line.replace(`<= ${bound})`, '<= 1114111)') }
      },
    },
    { intent: 'run', args: () => ({ command: TESTS }) },
    {
      intent: 'end',
      args: () => ({ summary: 'is_unicode_scalar_value stopped at 65535; Unicode goes to 1114111 (0x10FFFF), so escapes above the BMP were refused.' }),
    },
  ]
  return (body: Record<string, any>): CompletionScript => {
    const answers = (body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => String(m.content))
    const next = plan[answers.length]
    if (!next) return { text: 'Done.' }
    const name = toolFor(body.tools as ToolDefinition[], [...INTENTS[next.intent]])
    chosen.push(name)
    return { toolCalls: [{ name, arguments: JSON.stringify(next.args(answers)) }], finishReason: 'tool_calls' }
  }
}

describe.skipIf(!checkout)('develop on a real repository, with a model that chooses tools by their descriptions', () => {
  let h: AgentHarness
  let git: GitServer
  let importId: string
  beforeAll(async () => {
    git = startGitServer()
    h = await agentHarness({ IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`, SANDBOX_TIMEOUT_MS: '60000' })
    const listed = Bun.spawnSync(['git', '-C', checkout!, 'ls-files', '-z']).stdout.toString().split('\0').filter(Boolean)
    const files = Object.fromEntries(listed.map((path) => [path, new Uint8Array(readFileSync(join(checkout!, path)))]))
    const parser = new TextDecoder().decode(files['src/tomli/_parser.py'])
    expect(parser).toContain(BROKEN_FROM)
    files['src/tomli/_parser.py'] = new TextEncoder().encode(parser.replace(BROKEN_FROM, BROKEN_TO))
    git.createRepository('hukkin/tomli', files)
    importId = (await importRepository(h, git.urlOf('hukkin/tomli'))).id
  })
  afterAll(async () => {
    await h?.close()
    await git?.close()
  })

  test('it runs the tests, finds the fault from the error, fixes it, and the tests pass', async () => {
    const chosen: string[] = []
    h.model.fallback = scriptedEngineer(chosen)
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Three tests fail: make them pass', checks: ['PYTHONPATH=src python3 -m unittest'] })
    const final = await client.next(isFinal(taskId), 240_000)
    client.close()
    expect(final).toMatchObject({ type: 'result', output: { finished: true, checks: [{ passed: true }] } })
    expect(chosen).toEqual(['run_command', 'search_code', 'read_file', 'search_code', 'read_file', 'edit_file', 'run_command', 'finish'])
    expect(final.output.files).toEqual([{ path: 'src/tomli/_parser.py', status: 'modified' }])
    expect(final.output.diff).toContain(`+    return (0 <= codepoint <= 55295) or ${BROKEN_FROM}`)
    const answers = h.model.completions
      .at(-1)!
      .messages.filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content)
    expect(answers[0]).toContain('FAILED')
    expect(answers[6]).toMatch(/^exit 0/)
    expect(answers[6]).toContain('OK')
    if (process.env.SHOW_TRANSCRIPT) for (const [i, a] of answers.entries()) console.log(`--- ${chosen[i]}\n${a.slice(0, 700)}`)
  })
})
