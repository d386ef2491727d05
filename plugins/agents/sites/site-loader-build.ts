import { join } from 'node:path'

/**
 * Bundles site-loader.ts with happy-dom into one script for Bun. Imported `with { type: 'macro' }` by
 * site-loader-bundle.ts, so it runs when the service is bundled and the single executable carries the result
 * (there the loader's source is not on disk to be built); from source it runs when a site is first checked.
 * The bundler's command line is used because Bun.build cannot be called from inside a macro.
 */
export function bundledSiteLoader(): string {
  const build = Bun.spawnSync([process.execPath, 'build', join(import.meta.dir, 'site-loader.ts'), '--target=bun', '--format=esm', '--minify'], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) throw new Error(`the page loader did not build:\n${build.stderr.toString()}`)
  return build.stdout.toString()
}
