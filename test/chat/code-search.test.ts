import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from './helpers.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({}, { search: false })
})
afterAll(() => h.close())

test("the code_search tool searches the organisation's imported repositories", async () => {
  const me = await fetch(`${h.url}/auth/me`, { headers: h.headers }).then((r) => r.json())
  await h.t.deps.codeIndex.indexFiles({
    orgId: me.organizationId,
    repositoryId: 'repo-1',
    repositoryName: 'acme/billing',
    files: [
      {
        path: 'src/invoice.ts',
        language: 'TypeScript',
        content: 'export function computeInvoiceTotal(lines: { amount: number }[]) {\n  return lines.reduce((sum, l) => sum + l.amount, 0)\n}\n',
      },
      {
        path: 'src/mailer.ts',
        language: 'TypeScript',
        content: 'export async function sendWelcomeEmail(address: string) {\n  return fetch("/mail", { method: "POST", body: address })\n}\n',
      },
    ],
  })
  h.model.queue = [{ toolCalls: [{ name: 'code_search', arguments: JSON.stringify({ query: 'invoice total' }) }] }, { text: 'See src/invoice.ts.' }]
  const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'where is the invoice total computed?' }] }))
  const output = chunks(events).find((c) => c.type === 'tool-output-available')!.output
  expect(output.results[0]).toMatchObject({ repository: 'acme/billing', path: 'src/invoice.ts' })
  expect(textOf(events)).toBe('See src/invoice.ts.')
  const offered = h.model.completions.at(-2)!.tools.map((t: any) => t.function.name)
  expect(offered).toContain('code_search')
  const toolMessage = h.model.completions.at(-1)!.messages.find((m: any) => m.role === 'tool')
  expect(toolMessage.content).toContain('src/invoice.ts')
})
