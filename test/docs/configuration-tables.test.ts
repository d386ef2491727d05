/** docs/configuration.mdx against the settings declarations it is generated from (src/main/config-docs.ts). */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { serverUsage } from '../../src/command-line.ts'
import { CONFIGURATION_PAGE, configurationTables, withGeneratedTables } from '../../src/main/config-docs.ts'
import { describeVariables } from '../../src/main/config.ts'

const page = readFileSync(CONFIGURATION_PAGE, 'utf8')

describe('the configuration tables', () => {
  test('the page lists exactly the declared variables with their defaults (regenerate: bun src/main/config-docs.ts --write)', () => {
    expect(page).toBe(withGeneratedTables(page))
  })

  test('one section per slice, each slice in its own, in declaration order', () => {
    const headings = [...page.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    expect(headings).toEqual([...configurationTables().keys()])
  })

  test('a changed default, a new variable and a new slice change the generated page', () => {
    const declared = describeVariables()
    const changed = declared.map((v) => (v.name === 'PORT' ? { ...v, fallback: '8080' } : v))
    changed.push({ section: 'Storage', name: 'REDIS_TEST_ONLY', doc: 'A <b> {x}', fallback: '["a","b"]' })
    changed.push({ section: 'A new slice', name: 'NEW_SLICE_VARIABLE', doc: 'Something new', fallback: '(unset)' })
    const regenerated = withGeneratedTables(page, configurationTables(changed))
    expect(regenerated).toContain('| `PORT` | `8080` | TCP port the server listens on |')
    expect(regenerated).not.toContain('| `PORT` | `3000` |')
    expect(regenerated).toContain('| `REDIS_TEST_ONLY` | `a,b` | A &lt;b> &#123;x&#125; |')
    expect(regenerated).toEndWith('## A new slice\n\n| variable | default | meaning |\n|---|---|---|\n| `NEW_SLICE_VARIABLE` | unset | Something new |\n')
    // The prose around the tables stays the page's own.
    expect(withGeneratedTables(regenerated.replace(/\n\n## A new slice[\s\S]*$/, '\n'))).toBe(page)
  })

  test('every variable --help names is declared', () => {
    const usage = serverUsage('server')
    const listed = usage.slice(usage.indexOf('The main ones'), usage.indexOf('Every variable'))
    const names = [...listed.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b(?:PORT|HOST)\b/g)].map((m) => m[0])
    expect(names.length).toBeGreaterThan(5)
    const declared = new Set(describeVariables().map((v) => v.name))
    expect(names.filter((name) => !declared.has(name))).toEqual([])
  })
})
