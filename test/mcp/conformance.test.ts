import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeApp, tempDir, type TestApp } from '../helpers.ts'

/**
 * The official MCP conformance suite's server scenarios, run by its CLI against the service on a real port:
 * dns-rebinding-protection, and the others that test what this server offers. The rest ask for features it
 * does not have (resources, prompts, logging, completion, sampling, elicitation, progress, sessions) or call
 * the suite's own test tools, which an unknown-tool error passes only by accident.
 */
const OTHER_SCENARIOS = ['server-initialize', 'ping', 'tools-list']

// Its CLI needs a newer Node than some machines have; Bun runs it.
const cli = (() => {
  try {
    return Bun.resolveSync('@modelcontextprotocol/conformance/dist/index.js', import.meta.dir)
  } catch {
    return undefined
  }
})()
const runs = cli !== undefined && Bun.spawnSync([process.execPath, cli, 'list', '--server']).stdout.toString().includes('dns-rebinding-protection')
if (!runs) console.warn('[skip] MCP conformance suite: @modelcontextprotocol/conformance is not installed or its CLI does not run')

interface Check {
  id: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
  errorMessage?: string
}

describe.skipIf(!runs)('MCP conformance suite against a running service', () => {
  let t: TestApp
  let server: ReturnType<typeof Bun.serve>
  let url: string
  const results = tempDir('mcp-conformance-')

  beforeAll(async () => {
    // The server starts first so PUBLIC_BASE_URL can be its real origin, the address the suite calls.
    let handle: (request: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 })
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => handle(request) })
    t = await makeApp({ PUBLIC_BASE_URL: server.url.origin })
    handle = (request) => t.app.handle(request)
    url = `${server.url.origin}/mcp`
  })

  afterAll(async () => {
    server?.stop(true)
    await t?.close()
    results.remove()
  })

  /** Runs one scenario and reads back the checks it saved. */
  async function scenario(name: string): Promise<{ exitCode: number; output: string; checks: Check[] }> {
    const outputDir = join(results.path, name)
    const run = Bun.spawn([process.execPath, cli!, 'server', '--url', url, '--scenario', name, '--output-dir', outputDir], {
      cwd: results.path,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
    const saved = readdirSync(outputDir).find((dir) => dir.startsWith(`server-${name}-`))
    const checks = saved ? (JSON.parse(readFileSync(join(outputDir, saved, 'checks.json'), 'utf8')) as Check[]) : []
    return { exitCode, output: stdout + stderr, checks }
  }

  test("dns-rebinding-protection: a foreign Host and Origin are refused, the server's own are served", async () => {
    const { exitCode, output, checks } = await scenario('dns-rebinding-protection')
    expect(checks.map((c) => [c.id, c.status])).toEqual([
      ['localhost-host-rebinding-rejected', 'SUCCESS'],
      ['localhost-host-valid-accepted', 'SUCCESS'],
    ])
    expect(exitCode, output).toBe(0)
  })

  for (const name of OTHER_SCENARIOS)
    test(`${name} passes`, async () => {
      const { exitCode, output, checks } = await scenario(name)
      expect(checks.filter((c) => c.status === 'FAILURE')).toEqual([])
      expect(checks.some((c) => c.status === 'SUCCESS')).toBe(true)
      expect(exitCode, output).toBe(0)
    })
})
