/**
 * The variable tables of docs/configuration.mdx, generated from the settings declarations: one table per slice,
 * under the heading that is the slice's title. `bun src/main/config-docs.ts` prints them; with `--write` it
 * rewrites the page's tables in place (the prose around them is the page's own) and appends sections it lacks.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { VariableDescription } from '../config.ts'
import { describeVariables } from './config.ts'

export const CONFIGURATION_PAGE = join(import.meta.dir, '..', '..', 'docs', 'configuration.mdx')

const TABLE_HEAD = '| variable | default | meaning |\n|---|---|---|'

/** Markdown that MDX reads as text: outside code spans, `<` `{` `}` would start JSX or an expression. */
function mdxText(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replaceAll('<', '&lt;').replaceAll('{', '&#123;').replaceAll('}', '&#125;').replaceAll('|', '\\|')))
    .join('')
}

/** A default as it would be written in the environment: strings bare, lists comma-separated. */
function defaultCell(v: VariableDescription): string {
  if (v.shown !== undefined) return `\`${v.shown}\``
  if (v.fallback === '(unset)') return 'unset'
  const value = JSON.parse(v.fallback) as unknown
  if (Array.isArray(value)) return value.length === 0 ? 'empty' : `\`${value.join(',')}\``
  return `\`${String(value)}\``
}

/** Each slice's table, by slice title, in declaration order. */
export function configurationTables(variables: VariableDescription[] = describeVariables()): Map<string, string> {
  const rows = new Map<string, string[]>()
  for (const v of variables) {
    const section = rows.get(v.section) ?? []
    section.push(`| \`${v.name}\` | ${defaultCell(v)} | ${mdxText(v.doc)} |`)
    rows.set(v.section, section)
  }
  return new Map([...rows].map(([title, lines]) => [title, `${TABLE_HEAD}\n${lines.join('\n')}`]))
}

/** `page` with the table of each `## <title>` section replaced (or added), and the sections it lacks appended. */
export function withGeneratedTables(page: string, tables: Map<string, string> = configurationTables()): string {
  let result = page
  for (const [title, table] of tables) {
    const heading = new RegExp(`^## ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`, 'm').exec(result)
    if (!heading) {
      result = `${result.trimEnd()}\n\n## ${title}\n\n${table}\n`
      continue
    }
    const start = heading.index + heading[0].length
    const next = result.slice(start).search(/^## /m)
    const end = next === -1 ? result.length : start + next
    const section = result.slice(start, end)
    const existing = /^\| variable \| default \| meaning \|\n(?:\|.*\n?)*/m.exec(section)
    const body = existing
      ? `${section.slice(0, existing.index)}${table}\n${section.slice(existing.index + existing[0].length)}`
      : `${section.trimEnd()}\n\n${table}\n${next === -1 ? '' : '\n'}`
    result = result.slice(0, start) + body + result.slice(end)
  }
  return result
}

if (import.meta.main) {
  if (process.argv.includes('--write')) writeFileSync(CONFIGURATION_PAGE, withGeneratedTables(readFileSync(CONFIGURATION_PAGE, 'utf8')))
  else for (const [title, table] of configurationTables()) console.log(`## ${title}\n\n${table}\n`)
}
