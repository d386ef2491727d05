import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The playground page, its script and its stylesheet, each with a hash for its ETag. */
export interface PlaygroundAssets {
  html: string
  script: string
  style: string
  /** Short content hashes, by asset. */
  hashes: { html: string; script: string; style: string }
}

const CLIENT = join(import.meta.dir, 'client')

const hash = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('base64url').slice(0, 16)

/**
 * Bundles client/main.ts (with the AI SDK's chat client) for the browser and reads the page and its
 * stylesheet. Imported `with { type: 'macro' }`, so it runs when the service is bundled and the
 * single executable carries the result; from source it runs when the playground is first asked for.
 * The bundler's command line is used because Bun.build cannot be called from inside a macro.
 */
export function bundledPlaygroundAssets(): PlaygroundAssets {
  const build = Bun.spawnSync([process.execPath, 'build', join(CLIENT, 'main.ts'), '--target=browser', '--format=esm', '--minify', '--sourcemap=none'], {
    env: { ...process.env, NODE_ENV: 'production' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) throw new Error(`the playground's script did not build:\n${build.stderr.toString()}`)
  const script = build.stdout.toString()
  const html = readFileSync(join(CLIENT, 'index.html'), 'utf8')
  const style = readFileSync(join(CLIENT, 'playground.css'), 'utf8')
  return { html, script, style, hashes: { html: hash(html), script: hash(script), style: hash(style) } }
}
