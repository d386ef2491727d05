/** What the import benches share: timing, git on the command line, and an index that only reads what it is handed. */
import type { CodeIndex } from '../../plugins/code-search/index.ts'

export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now()
  const value = await work()
  return { ms: performance.now() - started, value }
}

export async function git(args: string[], cwd?: string): Promise<void> {
  const child = Bun.spawn(['git', ...args], { cwd, stdout: 'ignore', stderr: 'pipe' })
  if ((await child.exited) !== 0) throw new Error(`git ${args.join(' ')}: ${await new Response(child.stderr).text()}`)
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** An index that reads every file it is handed, as a real one must, and keeps nothing. */
export const drainingIndex: CodeIndex = {
  async indexFiles(input) {
    let files = 0
    for await (const _ of input.files) files++
    return { files, chunks: 0 }
  },
  async removeRepository() {},
  async search() {
    return []
  },
  async close() {},
}

/** Import settings for a bench's local git server: that server allowed, limits far above any bench repository. */
export function importSettings(server: { url: string; port: number }) {
  return {
    codehostUrl: server.url,
    codehostProvider: 'github' as const,
    allowHosts: [`127.0.0.1:${server.port}`],
    maxRepositoryBytes: 2 * 1024 ** 3,
    maxFiles: 1_000_000,
    maxFileBytes: 100 * 1024 ** 2,
    cloneTimeoutMs: 600_000,
  }
}
