/**
 * The documentation contextual menu: the `contextual` section of docs.json checked at start-up, and
 * each page's menu entries resolved to links (pure functions, no request context).
 */

/**
 * Built-in option ids the documentation platform's schema accepts, in its order. A test compares this
 * list with the platform's validator so the two cannot drift.
 */
export const BUILT_IN_OPTIONS = [
  'copy',
  'assistant',
  'view',
  'download-pdf',
  'download-spec',
  'chatgpt',
  'claude',
  'perplexity',
  'grok',
  'aistudio',
  'devin',
  'windsurf',
  'mcp',
  'add-mcp',
  'cursor',
  'vscode',
  'devin-mcp',
] as const
export type BuiltInOption = (typeof BUILT_IN_OPTIONS)[number]

/** The contract's neutral ids, accepted as aliases of the vendor ids the platform uses. */
export const NEUTRAL_OPTION_ALIASES: Readonly<Record<string, BuiltInOption>> = {
  assistant1: 'chatgpt',
  assistant2: 'claude',
  assistant3: 'perplexity',
  editor1: 'cursor',
  editor2: 'vscode',
}

/** Font Awesome styles a custom option's `iconType` (or an icon object's `style`) may name. */
export const ICON_TYPES = [
  'brands',
  'duotone',
  'light',
  'regular',
  'sharp-duotone-solid',
  'sharp-light',
  'sharp-regular',
  'sharp-solid',
  'sharp-thin',
  'solid',
  'thin',
] as const
export const ICON_LIBRARIES = ['fontawesome', 'lucide', 'tabler'] as const

/** `contextual.display`: `header` puts the menu at the top of the page, `toc` in the table of contents. */
export const DISPLAY_OPTIONS = ['header', 'toc'] as const
export type ContextualDisplay = (typeof DISPLAY_OPTIONS)[number]

/**
 * Longest a resolved query value or assistant prompt may be once URL-encoded, in characters. Chat
 * services and the proxies in front of them refuse URLs much past 8 KiB; 6,000 leaves room for the
 * base and other parameters. When `$page` pushes a value over, the page is cut (never inside a
 * character) and ends with "…".
 */
export const MAX_ENCODED_VALUE_LENGTH = 6000

export type Icon = string | { readonly name: string; readonly style?: string; readonly library?: string }

export interface QueryEntry {
  readonly key: string
  readonly value: string
}

export interface CustomOption {
  readonly title: string
  readonly description: string
  readonly icon: Icon
  readonly iconType?: string
  readonly href: string | { readonly base: string; readonly query: readonly QueryEntry[] }
}

export type ContextualOption = BuiltInOption | CustomOption

export interface ContextualMenuConfig {
  readonly options: readonly ContextualOption[]
  readonly display: ContextualDisplay
}

/** The `contextual` section of docs.json is wrong; `problems` names each bad entry and field. */
export class ContextualConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`docs.json contextual menu is invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ContextualConfigError'
  }
}

const CUSTOM_FIELDS = ['title', 'description', 'icon', 'iconType', 'href']
// Schemes that would run code in the reader's browser if put in a link.
const UNSAFE_SCHEME = /^\s*(javascript|data|vbscript|file):/i

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const kindOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value)

/** A link target: an absolute URL with a scheme (deep links included) or a path on this site. */
function linkProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string, got ${kindOf(value)}`
  if (value.trim() === '') return 'must not be empty'
  if (UNSAFE_SCHEME.test(value)) return `must not use the ${value.trim().split(':')[0]!.toLowerCase()}: scheme`
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value) && !value.startsWith('/')) return `must be an absolute URL or a path starting with "/", got "${value}"`
  return undefined
}

function iconProblems(icon: unknown, at: string, problems: string[]) {
  if (typeof icon === 'string') {
    if (icon.trim() === '') problems.push(`${at}: must not be empty`)
    return
  }
  if (!isRecord(icon)) return problems.push(`${at}: must be a string or an object with name, got ${kindOf(icon)}`)
  if (typeof icon.name !== 'string' || icon.name.trim() === '') problems.push(`${at}.name: is required (a string)`)
  if (icon.style !== undefined && !(ICON_TYPES as readonly unknown[]).includes(icon.style))
    problems.push(`${at}.style: must be one of ${ICON_TYPES.join(', ')}, got ${JSON.stringify(icon.style)}`)
  if (icon.library !== undefined && !(ICON_LIBRARIES as readonly unknown[]).includes(icon.library))
    problems.push(`${at}.library: must be one of ${ICON_LIBRARIES.join(', ')}, got ${JSON.stringify(icon.library)}`)
  for (const key of Object.keys(icon)) if (!['name', 'style', 'library'].includes(key)) problems.push(`${at}.${key}: is not a known field`)
}

function hrefProblems(href: unknown, at: string, problems: string[]) {
  if (typeof href === 'string') {
    const problem = linkProblem(href)
    if (problem) problems.push(`${at}: ${problem}`)
    return
  }
  if (!isRecord(href)) return problems.push(`${at}: must be a string or an object with base and query, got ${kindOf(href)}`)
  if (href.base === undefined) problems.push(`${at}.base: is required`)
  else {
    const problem = linkProblem(href.base)
    if (problem) problems.push(`${at}.base: ${problem}`)
  }
  if (href.query === undefined) problems.push(`${at}.query: is required (a list of { key, value })`)
  else if (!Array.isArray(href.query)) problems.push(`${at}.query: must be a list of { key, value }, got ${kindOf(href.query)}`)
  else
    for (const [i, entry] of (href.query as unknown[]).entries()) {
      const entryAt = `${at}.query[${i}]`
      if (!isRecord(entry)) {
        problems.push(`${entryAt}: must be an object with key and value, got ${kindOf(entry)}`)
        continue
      }
      for (const field of ['key', 'value'] as const) {
        if (entry[field] === undefined) problems.push(`${entryAt}.${field}: is required`)
        else if (typeof entry[field] !== 'string') problems.push(`${entryAt}.${field}: must be a string, got ${kindOf(entry[field])}`)
      }
      if (entry.key === '') problems.push(`${entryAt}.key: must not be empty`)
      for (const key of Object.keys(entry)) if (key !== 'key' && key !== 'value') problems.push(`${entryAt}.${key}: is not a known field`)
    }
  for (const key of Object.keys(href)) if (key !== 'base' && key !== 'query') problems.push(`${at}.${key}: is not a known field`)
}

function customProblems(option: Record<string, unknown>, at: string, problems: string[]) {
  for (const field of ['title', 'description'] as const) {
    if (option[field] === undefined) problems.push(`${at}.${field}: is required`)
    else if (typeof option[field] !== 'string') problems.push(`${at}.${field}: must be a string, got ${kindOf(option[field])}`)
  }
  if (typeof option.title === 'string' && option.title.trim() === '') problems.push(`${at}.title: must not be empty`)
  if (option.icon === undefined) problems.push(`${at}.icon: is required`)
  else iconProblems(option.icon, `${at}.icon`, problems)
  if (option.iconType !== undefined && !(ICON_TYPES as readonly unknown[]).includes(option.iconType))
    problems.push(`${at}.iconType: must be one of ${ICON_TYPES.join(', ')}, got ${JSON.stringify(option.iconType)}`)
  if (option.href === undefined) problems.push(`${at}.href: is required`)
  else hrefProblems(option.href, `${at}.href`, problems)
  for (const key of Object.keys(option)) if (!CUSTOM_FIELDS.includes(key)) problems.push(`${at}.${key}: is not a known field`)
}

/**
 * Checks the `contextual` section of docs.json and answers it with neutral ids mapped to the vendor
 * ids. An absent section is an empty menu. Throws a ContextualConfigError naming every bad entry.
 */
export function parseContextualConfig(raw: unknown): ContextualMenuConfig {
  if (raw === undefined) return { options: [], display: 'header' }
  const problems: string[] = []
  if (!isRecord(raw)) throw new ContextualConfigError([`contextual: must be an object with options, got ${kindOf(raw)}`])
  const display = raw.display ?? 'header'
  if (!(DISPLAY_OPTIONS as readonly unknown[]).includes(display))
    problems.push(`contextual.display: must be one of ${DISPLAY_OPTIONS.join(', ')}, got ${JSON.stringify(display)}`)
  for (const key of Object.keys(raw)) if (key !== 'options' && key !== 'display') problems.push(`contextual.${key}: is not a known field`)
  const options: ContextualOption[] = []
  if (raw.options === undefined) problems.push('contextual.options: is required (a list)')
  else if (!Array.isArray(raw.options)) problems.push(`contextual.options: must be a list, got ${kindOf(raw.options)}`)
  else {
    const seen = new Map<string, number>()
    for (const [i, entry] of (raw.options as unknown[]).entries()) {
      const at = `contextual.options[${i}]`
      if (typeof entry === 'string') {
        const id = NEUTRAL_OPTION_ALIASES[entry] ?? entry
        if (!(BUILT_IN_OPTIONS as readonly string[]).includes(id)) {
          const known = [...BUILT_IN_OPTIONS, ...Object.keys(NEUTRAL_OPTION_ALIASES)].join(', ')
          problems.push(`${at}: "${entry}" is not a built-in option; known ids are ${known}`)
          continue
        }
        const earlier = seen.get(id)
        if (earlier !== undefined) {
          problems.push(`${at}: "${entry}" repeats contextual.options[${earlier}] (${id}); each option may appear once`)
          continue
        }
        seen.set(id, i)
        options.push(id as BuiltInOption)
      } else if (isRecord(entry)) {
        const before = problems.length
        customProblems(entry, at, problems)
        if (problems.length === before) {
          const href = entry.href as CustomOption['href']
          options.push({
            title: entry.title as string,
            description: entry.description as string,
            icon: entry.icon as Icon,
            ...(entry.iconType !== undefined ? { iconType: entry.iconType as string } : {}),
            href: typeof href === 'string' ? href : { base: href.base, query: href.query.map((q) => ({ key: q.key, value: q.value })) },
          })
        }
      } else problems.push(`${at}: must be a built-in id (a string) or a custom option (an object), got ${kindOf(entry)}`)
    }
  }
  if (problems.length > 0) throw new ContextualConfigError(problems)
  return { options, display: display as ContextualDisplay }
}

// ---------------------------------------------------------------------------------------------------
// Resolution: what each entry does on one page.

/** What a page gives its menu. */
export interface PageContext {
  /** The page's path on the site, `/docs/search`; `$path`. */
  readonly path: string
  /** The page as Markdown, as `/docs/<path>.md` serves it; `$page`. */
  readonly markdown: string
  /** Absolute URL of the page's Markdown, put in assistant prompts. */
  readonly markdownUrl: string
  /** Hosted MCP server URL; `$mcp`. */
  readonly mcpUrl: string
  /** Name the MCP server is installed under in editors (the site's name). */
  readonly serverName: string
  /** Where the OpenAPI document is served. */
  readonly specUrl: string
}

/** One menu entry: a link, or text the script copies to the clipboard. */
export type MenuEntry =
  | {
      readonly kind: 'link'
      readonly id: string
      readonly title: string
      readonly description: string
      readonly href: string
      /** Open in a new tab (web pages; deep links into applications stay in place). */
      readonly newTab: boolean
      readonly icon?: Icon
      readonly download?: boolean
    }
  | {
      /** Opens the documentation assistant's dialog on the page (POST /api/docs/assistant). */
      readonly kind: 'assistant'
      readonly id: string
      readonly title: string
      readonly description: string
      readonly icon?: Icon
    }
  | {
      readonly kind: 'copy'
      readonly id: string
      readonly title: string
      readonly description: string
      /** `page` copies the page's Markdown; otherwise the text itself. */
      readonly copy: { readonly page: true } | { readonly text: string }
      /** Where the entry leads without script (the Markdown page for `copy`). */
      readonly fallbackHref?: string
      readonly icon?: Icon
    }

/** Chat services opened with a prompt: the URL up to the prompt, the prompt URL-encoded after it. */
const ASSISTANTS: Partial<Record<BuiltInOption, { title: string; prefix: string }>> = {
  chatgpt: { title: 'Open in ChatGPT', prefix: 'https://chatgpt.com/?hints=search&q=' },
  claude: { title: 'Open in Claude', prefix: 'https://claude.ai/new?q=' },
  perplexity: { title: 'Open in Perplexity', prefix: 'https://www.perplexity.ai/search?q=' },
  grok: { title: 'Open in Grok', prefix: 'https://grok.com/?q=' },
  aistudio: { title: 'Open in Google AI Studio', prefix: 'https://aistudio.google.com/prompts/new_chat?prompt=' },
  devin: { title: 'Open in Devin', prefix: 'https://app.devin.ai/?prompt=' },
}

const ELLIPSIS = '…'

/** `encodeURIComponent` that never throws: lone surrogates become U+FFFD first. */
export const encodeQueryComponent = (text: string) => encodeURIComponent(text.toWellFormed())

/** The longest prefix of `text` (whole code points) whose encoded form fits `budget`, with "…" when cut. */
export function truncateEncoded(text: string, budget: number): string {
  const safe = text.toWellFormed()
  if (encodeURIComponent(safe).length <= budget) return safe
  const room = budget - encodeURIComponent(ELLIPSIS).length
  let used = 0
  let end = 0
  for (const char of safe) {
    const size = encodeURIComponent(char).length
    if (used + size > room) break
    used += size
    end += char.length
  }
  return safe.slice(0, end) + ELLIPSIS
}

const PLACEHOLDER = /\$(page|path|mcp)(?![A-Za-z0-9_])/g

/**
 * Replaces `$page`, `$path` and `$mcp` in one query value, in a single pass (text substituted is never
 * scanned again). A placeholder must not run on into a letter, digit or `_`: `$pathX` stays as written.
 * `$page` is cut so that the encoded value fits MAX_ENCODED_VALUE_LENGTH.
 */
export function substitutePlaceholders(value: string, page: PageContext): string {
  // split with one capture group alternates literal text (even indexes) and placeholder names (odd).
  const pieces = value.split(PLACEHOLDER)
  const fill = (pageText: string) =>
    pieces.map((piece, i) => (i % 2 === 0 ? piece : piece === 'page' ? pageText : piece === 'path' ? page.path : page.mcpUrl)).join('')
  const pageSlots = pieces.filter((piece, i) => i % 2 === 1 && piece === 'page').length
  if (pageSlots === 0) return fill('')
  // Whatever the rest of the value leaves of the cap is shared by its $page slots.
  const budget = Math.floor((MAX_ENCODED_VALUE_LENGTH - encodeQueryComponent(fill('')).length) / pageSlots)
  return fill(truncateEncoded(page.markdown, Math.max(budget, 0)))
}

/** `base` with `pairs` appended as its query (before any `#fragment`), each part percent-encoded. */
export function appendQuery(base: string, pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return base
  const hash = base.indexOf('#')
  const head = hash === -1 ? base : base.slice(0, hash)
  const fragment = hash === -1 ? '' : base.slice(hash)
  const query = pairs.map(([key, value]) => `${encodeQueryComponent(key)}=${encodeQueryComponent(value)}`).join('&')
  const separator = !head.includes('?') ? '?' : head.endsWith('?') || head.endsWith('&') ? '' : '&'
  return head + separator + query + fragment
}

/** A custom option's link on one page: a string as written, an object with its placeholders resolved. */
export function resolveHref(href: CustomOption['href'], page: PageContext): string {
  if (typeof href === 'string') return href
  return appendQuery(
    href.base,
    href.query.map((entry) => [entry.key, substitutePlaceholders(entry.value, page)] as const),
  )
}

/** The prompt an assistant opens with: it fetches the page's Markdown itself. */
export function assistantPrompt(markdownUrl: string): string {
  return truncateEncoded(`Read ${markdownUrl} so I can ask questions about it.`, MAX_ENCODED_VALUE_LENGTH)
}

/** Cursor's MCP install deep link: the server name, and its config `{ url }` as base64 JSON. */
export function cursorInstallLink(name: string, mcpUrl: string): string {
  const config = Buffer.from(JSON.stringify({ url: mcpUrl }), 'utf8').toString('base64')
  return `cursor://anysphere.cursor-deeplink/mcp/install?name=${encodeQueryComponent(name)}&config=${encodeQueryComponent(config)}`
}

/** VS Code's MCP install link: the server definition as URL-encoded JSON. */
export function vscodeInstallLink(name: string, mcpUrl: string): string {
  return `vscode:mcp/install?${encodeQueryComponent(JSON.stringify({ name, type: 'http', url: mcpUrl }))}`
}

/**
 * The key an editor's configuration files the server under: the site's name in lower case, runs of
 * anything but letters and digits as one "-" ("Real-time AI platform" -> "real-time-ai-platform").
 */
export function mcpServerKey(name: string): string {
  const key = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '')
  return key || 'docs'
}

/** One POSIX shell word: left bare when it holds only characters no shell treats specially, else single-quoted. */
export function shellWord(text: string): string {
  if (/^[A-Za-z0-9_/:.,@%+=-]+$/.test(text)) return text
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/**
 * The server's entry for Windsurf (now Devin Desktop). Windsurf's MCP documentation (Cascade, "Model Context
 * Protocol") gives a one-click deep link only for servers of its own registry
 * (`windsurf://windsurf-mcp-registry?serverName=<name>`), none that takes a server URL, so the menu copies
 * the entry the same page documents for a remote HTTP server in `mcp_config.json`:
 * `{ "mcpServers": { "<name>": { "serverUrl": "<url>" } } }`.
 */
export function windsurfMcpConfig(name: string, mcpUrl: string): string {
  return JSON.stringify({ mcpServers: { [mcpServerKey(name)]: { serverUrl: mcpUrl } } }, null, 2)
}

/**
 * Devin's documentation ("MCP Configuration" of its command line) adds a remote server with
 * `devin mcp add <name> <url>`: a URL means Streamable HTTP, and `-s user` keeps the server for every
 * project. Its web app documents no install link, only the "Add your own" form of its MCP marketplace, so
 * the menu copies the command.
 */
export function devinMcpCommand(name: string, mcpUrl: string): string {
  return `devin mcp add -s user ${shellWord(mcpServerKey(name))} ${shellWord(mcpUrl)}`
}

const isWebLink = (href: string) => /^https?:\/\//i.test(href) || href.startsWith('/')

function builtInEntry(id: BuiltInOption, page: PageContext): MenuEntry {
  const assistant = ASSISTANTS[id]
  if (assistant) {
    const href = assistant.prefix + encodeQueryComponent(assistantPrompt(page.markdownUrl))
    return { kind: 'link', id, title: assistant.title, description: 'Ask questions about this page', href, newTab: true }
  }
  switch (id) {
    case 'assistant':
      return { kind: 'assistant', id, title: 'Ask assistant', description: 'Ask the documentation assistant about this page' }
    case 'download-pdf':
      return { kind: 'link', id, title: 'Download PDF', description: 'Download this page as a PDF', href: `${page.path}.pdf`, newTab: false, download: true }
    case 'copy':
      return { kind: 'copy', id, title: 'Copy page', description: 'Copy this page as Markdown for LLMs', copy: { page: true }, fallbackHref: `${page.path}.md` }
    case 'view':
      return { kind: 'link', id, title: 'View as Markdown', description: 'View this page as plain text', href: `${page.path}.md`, newTab: true }
    case 'mcp':
      return { kind: 'copy', id, title: 'Copy MCP server URL', description: 'Copy the MCP server URL to the clipboard', copy: { text: page.mcpUrl } }
    case 'add-mcp':
      return {
        kind: 'copy',
        id,
        title: 'Copy MCP install command',
        description: 'Install the MCP server in your agents with add-mcp',
        copy: { text: `npx add-mcp ${shellWord(page.mcpUrl)}` },
      }
    case 'cursor':
      return {
        kind: 'link',
        id,
        title: 'Connect to Cursor',
        description: 'Install the MCP server in Cursor',
        href: cursorInstallLink(page.serverName, page.mcpUrl),
        newTab: false,
      }
    case 'vscode':
      return {
        kind: 'link',
        id,
        title: 'Connect to VS Code',
        description: 'Install the MCP server in VS Code',
        href: vscodeInstallLink(page.serverName, page.mcpUrl),
        newTab: false,
      }
    case 'windsurf':
      return {
        kind: 'copy',
        id,
        title: 'Connect to Windsurf',
        description: "Copy the MCP server's entry for mcp_config.json in Windsurf (Devin Desktop)",
        copy: { text: windsurfMcpConfig(page.serverName, page.mcpUrl) },
      }
    case 'devin-mcp':
      return {
        kind: 'copy',
        id,
        title: 'Connect to Devin',
        description: 'Copy the command that adds the MCP server to Devin',
        copy: { text: devinMcpCommand(page.serverName, page.mcpUrl) },
      }
    case 'download-spec':
      return {
        kind: 'link',
        id,
        title: 'Download OpenAPI spec',
        description: 'The OpenAPI document of this API',
        href: page.specUrl,
        newTab: false,
        download: true,
      }
  }
  // Every id of BUILT_IN_OPTIONS is answered above or in ASSISTANTS; a new one must be given its entry.
  throw new Error(`built-in menu option "${id}" has no entry`)
}

/** Every entry of the menu on one page, in docs.json order. */
export function resolveMenu(config: ContextualMenuConfig, page: PageContext): MenuEntry[] {
  const entries: MenuEntry[] = []
  config.options.forEach((option, i) => {
    if (typeof option === 'string') {
      entries.push(builtInEntry(option, page))
      return
    }
    const href = resolveHref(option.href, page)
    entries.push({
      kind: 'link',
      id: `custom-${i}`,
      title: option.title,
      description: option.description,
      href,
      newTab: isWebLink(href),
      icon: option.icon,
    })
  })
  return entries
}
