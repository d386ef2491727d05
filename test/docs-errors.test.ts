import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { errorCodes } from '../src/errors.ts'

test('the errors page documents every error code with its status', () => {
  const page = readFileSync(join(import.meta.dir, '..', 'docs', 'errors.mdx'), 'utf8')
  for (const [code, { status }] of Object.entries(errorCodes)) expect(page).toContain(`| \`${code}\` | ${status} |`)
})
