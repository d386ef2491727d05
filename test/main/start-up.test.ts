import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'

/** The packages a fresh process loads to build the service and answer GET /health (then to warm up or sign in, when asked), each with its files loaded. */
async function loadedModules(env: Record<string, string> = {}, then?: 'warm-up' | 'sign-in'): Promise<Record<string, string[]>> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, 'loaded-packages.ts'), JSON.stringify(env), ...(then ? [then] : [])], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`the start failed (${code}): ${err}`)
  return JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, string[]>
}

const loadedPackages = async (env: Record<string, string> = {}, then?: 'warm-up' | 'sign-in') => Object.keys(await loadedModules(env, then)).sort()

// What only some requests use: each is loaded by the first of them.
const LOADED_ON_FIRST_USE = [
  '@modelcontextprotocol/sdk',
  'zod',
  'ajv',
  'pdf-lib',
  'marked',
  '@elysiajs/openapi',
  'openai',
  'stripe',
  'isomorphic-git',
  'prom-client',
  '@opentelemetry/api',
  'parse5',
  'happy-dom',
  'jose',
]

describe('start-up', () => {
  test('builds the service and answers /health without loading any library only some requests use', async () => {
    const loaded = await loadedPackages()
    expect(loaded).toContain('elysia')
    expect(loaded.filter((name) => LOADED_ON_FIRST_USE.includes(name))).toEqual([])
  })

  test('with everything optional configured, the payment and model libraries still wait for their first use', async () => {
    const loaded = await loadedPackages({
      STRIPE_SECRET_KEY: 'sk_test_start-up',
      PAYMENT_WEBHOOK_SECRET: 'whsec_start-up',
      PLAN_PRICES: 'team=price_team',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
    })
    expect(loaded).not.toContain('stripe')
    expect(loaded).not.toContain('openai')
  })

  test('with a model provider configured, the warm-up after listening loads its library', async () => {
    expect(await loadedPackages({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }, 'warm-up')).toContain('openai')
    expect(await loadedPackages({}, 'warm-up')).not.toContain('openai')
  })

  test("the code index's search engine waits for the first index; only its English stemmer is loaded", async () => {
    expect((await loadedModules())['@orama/orama']).toEqual(['dist/esm/components/tokenizer/english-stemmer.js'])
  })

  test('the first sign-in and the first authenticated request of a process load the token library and succeed', async () => {
    const loaded = await loadedPackages({ ADMIN_EMAIL: 'owner@start-up.test', ADMIN_PASSWORD: 'start-up password' }, 'sign-in')
    expect(loaded).toContain('jose')
  })
})
