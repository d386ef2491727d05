import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** One documentation page: its navigation path (`docs/search`), front matter and Markdown body. */
export interface DocsPage {
  readonly path: string
  readonly group: string
  readonly title: string
  readonly description: string
  /** The page body without its front matter. */
  readonly markdown: string
}

/** docs.json as read from disk, and every page its navigation lists, in navigation order. */
export interface DocsSite {
  readonly config: DocsConfig
  readonly pages: readonly DocsPage[]
}

export interface DocsConfig {
  readonly name: string
  readonly navigation: { readonly groups: readonly NavigationGroup[] }
  readonly contextual?: { readonly options: readonly unknown[] }
  readonly [field: string]: unknown
}

interface NavigationGroup {
  readonly group: string
  readonly pages: readonly (string | NavigationGroup)[]
}

/** Reads docs.json in `rootDir` and the `.mdx` (or `.md`) file of every page it lists. */
export function loadDocsSite(rootDir: string): DocsSite {
  const config = JSON.parse(readFileSync(join(rootDir, 'docs.json'), 'utf8')) as DocsConfig
  const pages: DocsPage[] = []
  const visit = (group: NavigationGroup) => {
    for (const entry of group.pages) {
      if (typeof entry === 'string') pages.push(readPage(rootDir, entry, group.group))
      else visit(entry)
    }
  }
  for (const group of config.navigation.groups) visit(group)
  return { config, pages }
}

function readPage(rootDir: string, path: string, group: string): DocsPage {
  const source = readSource(rootDir, path)
  const { frontMatter, body } = splitFrontMatter(source)
  return {
    path,
    group,
    title: typeof frontMatter.title === 'string' ? frontMatter.title : path,
    description: typeof frontMatter.description === 'string' ? frontMatter.description : '',
    markdown: body,
  }
}

function readSource(rootDir: string, path: string): string {
  for (const extension of ['.mdx', '.md']) {
    try {
      return readFileSync(join(rootDir, path + extension), 'utf8')
    } catch {
      // try the next extension
    }
  }
  throw new Error(`docs.json lists the page "${path}", but neither ${path}.mdx nor ${path}.md exists`)
}

function splitFrontMatter(source: string): { frontMatter: Record<string, unknown>; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(source)
  if (!match) return { frontMatter: {}, body: source }
  const frontMatter = Bun.YAML.parse(match[1]!) as Record<string, unknown> | null
  return { frontMatter: frontMatter ?? {}, body: source.slice(match[0].length) }
}
