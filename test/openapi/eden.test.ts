/**
 * Eden Treaty from outside src/ (docs/api-clients.mdx): test/openapi/eden/client.ts compiles with the compiler
 * options a front-end project would have, a wrong use does not, and the same calls work against the app.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ADMIN, makeApp } from '../helpers.ts'
import { connect, health, oneChat, recentChats, signIn, whoAmI } from './eden/client.ts'
import { scratchDir, typecheck } from './support.ts'

const CLIENT = join(import.meta.dir, 'eden', 'client.ts')
// What a project outside src/ needs to read the app's type (docs/api-clients.mdx): the server's source is checked
// with it, so Bun's types (not the DOM library's, which contradict them) and its JSON and .ts imports.
const FRONT_END = { lib: ['ESNext'], types: ['bun-types'], resolveJsonModule: true }

const scratch = scratchDir('eden-client-')
const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
afterAll(async () => {
  scratch.remove()
  await t.close()
})

/**
 * One tsc program for both compile tests: wrong.ts imports the client, so the client is checked in it too, and what
 * it reports about files other than wrong.ts is what the client alone would get (tsc over the app's whole type
 * graph: seconds alone, over half a minute on a loaded two-core machine).
 */
let compiled: ReturnType<typeof typecheck> | undefined
// Over two minutes when two other files of the suite share a loaded two-core machine with it.
const TSC_MS = 300_000
function compileClientAndWrongUse() {
  const wrong = scratch.write(
    'wrong.ts',
    [
      `import { connect } from ${JSON.stringify(CLIENT)}`,
      'const api = connect("http://localhost:3000")',
      '// A numeric string where the body wants an integer, and a route that does not exist.',
      'export const a = api.api["web-search"].post({ query: "bun", count: "5" })',
      'export const b = api.api.nowhere.get()',
    ].join('\n'),
  )
  compiled ??= typecheck(scratch.path, [CLIENT, wrong], FRONT_END)
  return compiled
}
/** Lines of tsc's report that are not about wrong.ts: a diagnostic's first line names its file, the rest are indented. */
const notAboutWrongUse = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s/.test(line))
    .filter((line) => !line.startsWith('wrong.ts('))

describe('Eden Treaty from outside src/', () => {
  test(
    'the client file compiles against `type App` with the compiler options docs/api-clients.mdx gives',
    async () => {
      const run = await compileClientAndWrongUse()
      expect(notAboutWrongUse(run.output)).toEqual([])
    },
    TSC_MS,
  )

  test(
    'a call the routes do not allow fails to compile',
    async () => {
      const run = await compileClientAndWrongUse()
      expect(run.exitCode).not.toBe(0)
      expect(run.output).toContain('wrong.ts(4,')
      expect(run.output).toContain("Type 'string' is not assignable to type 'number'")
      expect(run.output).toContain('wrong.ts(5,')
      expect(run.output).toContain("Property 'nowhere' does not exist")
    },
    TSC_MS,
  )

  test('the same calls work against the app', async () => {
    const anonymous = connect(t.app)
    expect(await health(anonymous)).toBe('ok')
    expect(await recentChats(anonymous)).toEqual({ refused: 401 })
    const session = await signIn(anonymous, ADMIN.email, ADMIN.password)
    expect(session.expiresInMs).toBeGreaterThan(60_000)
    const api = connect(t.app, session.accessToken)
    expect(await whoAmI(api)).toMatchObject({ scopes: session.scopes })
    expect(await recentChats(api)).toEqual({ titles: [], newest: 0 })
    expect(await oneChat(api, 'no-such-chat')).toEqual({ refused: 404 })
  })
})
