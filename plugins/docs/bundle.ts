import { join } from 'node:path'
import { loadDocsSite, type DocsSite } from './site.ts'

/**
 * docs.json and its pages, read when the service is bundled: imported `with { type: 'macro' }`, the
 * result is written into the code, so `bun build --compile` carries the documentation and the
 * executable serves it from any directory. `bun src/main/index.ts` reads them at each start.
 */
export function bundledDocsSite(): DocsSite {
  return loadDocsSite(join(import.meta.dir, '..', '..'))
}
