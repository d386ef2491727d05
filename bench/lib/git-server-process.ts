/**
 * The test suite's git smart-HTTP server (test/fakes/git-server.ts) in a process of its own, so that streaming a
 * pack to the importer costs the measured process nothing a real code host would not. Run as a script it serves
 * until its stdin closes; `startGitServerProcess` starts it and answers where it serves.
 */
import { startGitServer } from '../../test/fakes/git-server.ts'

export interface GitServerProcess {
  url: string
  port: number
  /** Directory of the served repositories (`<root>/<name>.git`). */
  root: string
  urlOf(name: string): string
  close(): Promise<void>
}

export async function startGitServerProcess(): Promise<GitServerProcess> {
  const child = Bun.spawn([process.execPath, import.meta.path], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the git server process ended before it served')
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  const { url, port, root } = JSON.parse(text.slice(0, text.indexOf('\n'))) as { url: string; port: number; root: string }
  return {
    url,
    port,
    root,
    urlOf: (name) => `${url}/${name}.git`,
    async close() {
      child.stdin.end()
      await child.exited
    },
  }
}

if (import.meta.main) {
  const server = startGitServer()
  console.log(JSON.stringify({ url: server.url, port: server.port, root: server.root }))
  for await (const _ of Bun.stdin.stream());
  await server.close()
  process.exit(0)
}
