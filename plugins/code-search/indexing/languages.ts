/**
 * Languages the chunker knows: the name a file's extension suggests, and the lines where a declaration
 * starts (the cheap "simple parsing" that lets a chunk hold one function or class).
 */

// biome-ignore format: a table, a family of languages a line
const EXTENSIONS: Record<string, string> = {
  ts: 'TypeScript', tsx: 'TypeScript', mts: 'TypeScript', cts: 'TypeScript',
  js: 'JavaScript', jsx: 'JavaScript', mjs: 'JavaScript', cjs: 'JavaScript',
  py: 'Python', pyi: 'Python', go: 'Go', rs: 'Rust', java: 'Java', kt: 'Kotlin', kts: 'Kotlin', scala: 'Scala',
  cs: 'C#', c: 'C', h: 'C', cc: 'C++', cpp: 'C++', cxx: 'C++', hpp: 'C++', hh: 'C++', swift: 'Swift',
  rb: 'Ruby', php: 'PHP', sh: 'Shell', bash: 'Shell', zsh: 'Shell', sql: 'SQL',
  md: 'Markdown', mdx: 'Markdown', json: 'JSON', yml: 'YAML', yaml: 'YAML', toml: 'TOML',
  html: 'HTML', css: 'CSS', scss: 'SCSS', vue: 'Vue', svelte: 'Svelte',
}

/** The language a path's extension suggests, or undefined. */
export function languageOfPath(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1)
  const dot = name.lastIndexOf('.')
  if (dot <= 0) return name === 'Dockerfile' ? 'Dockerfile' : undefined
  return EXTENSIONS[name.slice(dot + 1).toLowerCase()]
}

/** How filters compare languages: case-insensitively. */
export const languageKey = (language: string) => language.trim().toLowerCase()

export interface Structure {
  /** Matches a line that starts a declaration; group 1, when present, is the declared name. */
  declaration: RegExp
  /** Lines that belong to the declaration below them (comments, decorators, attributes). */
  preamble: RegExp
}

const C_COMMENTS = /^\s*(\/\/|\/\*|\*|@[\w.]+|#\[)/
const HASH_COMMENTS = /^\s*(#|@[\w.]+)/

const js: Structure = {
  declaration:
    /^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:(?:async\s+)?function\*?\s+([\w$]+)|(?:abstract\s+)?class\s+([\w$]+)|(?:interface|type|enum|namespace)\s+([\w$]+)|(?:const|let|var)\s+([\w$]+)\s*(?::[^=]+)?=\s*(?:async\s*)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[\w$]+\s*=>))|^\s{2,4}(?:(?:public|private|protected|static|readonly|async|override|get|set)\s+)*\*?(?!(?:if|for|while|switch|catch|with|return|function)\b)([\w$]+)\s*(?:<[^>]*>)?\([^;]*\)\s*(?::[^{;=]+)?\{\s*$/,
  preamble: C_COMMENTS,
}

const STRUCTURES: Record<string, Structure> = {
  typescript: js,
  javascript: js,
  python: { declaration: /^\s{0,4}(?:async\s+)?(?:def|class)\s+(\w+)/, preamble: HASH_COMMENTS },
  go: { declaration: /^(?:func\s+(?:\([^)]*\)\s*)?(\w+)|type\s+(\w+)|(?:var|const)\s*\()/, preamble: /^\s*\/\// },
  rust: {
    declaration:
      /^\s{0,4}(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?(?:const\s+)?(?:fn|struct|enum|trait|mod|union|type)\s+(\w+)|^\s{0,4}(?:unsafe\s+)?impl\b|^macro_rules!\s*(\w+)/,
    preamble: /^\s*(\/\/|#\[|#!\[)/,
  },
  java: {
    declaration:
      /^\s{0,4}(?:(?:public|private|protected|static|final|abstract|sealed|synchronized|native|default)\s+)*(?:(?:class|interface|enum|record|@interface)\s+(\w+)|(?!(?:return|new|else|throw|if|for|while|switch|catch)\b)[\w<>[\],.?]+\s+(\w+)\s*\([^;]*$)/,
    preamble: C_COMMENTS,
  },
  kotlin: {
    declaration:
      /^\s{0,4}(?:(?:public|private|protected|internal|open|abstract|sealed|data|inline|override|suspend|enum|inner)\s+)*(?:class|interface|object|fun)\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?(\w+)/,
    preamble: C_COMMENTS,
  },
  scala: {
    declaration: /^\s{0,4}(?:(?:private|protected|override|final|sealed|abstract|implicit|case)\s+)*(?:class|object|trait|def)\s+(\w+)/,
    preamble: C_COMMENTS,
  },
  swift: {
    declaration:
      /^\s{0,4}(?:(?:public|private|fileprivate|internal|open|static|final|override|mutating)\s+)*(?:class|struct|enum|protocol|extension|func)\s+(\w+)/,
    preamble: C_COMMENTS,
  },
  'c#': {
    declaration:
      /^\s{0,8}(?:(?:public|private|protected|internal|static|sealed|abstract|virtual|override|async|partial|readonly)\s+)+(?:(?:class|interface|enum|struct|record)\s+(\w+)|(?!(?:return|new|await|else|throw|if|for|foreach|while|switch|catch|using)\b)[\w<>[\],.?]+\s+(\w+)\s*\([^;]*$)|^\s{0,4}namespace\s+([\w.]+)/,
    preamble: /^\s*(\/\/|\/\*|\*|\[)/,
  },
  c: { declaration: /^(?:struct|union|enum|typedef)\b\s*(\w+)?|^[A-Za-z_][\w\s*]*?\b(\w+)\s*\([^;]*$/, preamble: C_COMMENTS },
  'c++': {
    declaration: /^(?:template\s*<.*>\s*)?(?:class|struct|union|enum|namespace)\s+(\w+)|^[A-Za-z_][\w\s*&:<>,~]*?\b([\w~]+)\s*\([^;]*$/,
    preamble: C_COMMENTS,
  },
  ruby: { declaration: /^\s{0,4}(?:def|class|module)\s+(?:self\.)?([\w?!]+)/, preamble: /^\s*#/ },
  php: {
    declaration: /^\s{0,4}(?:(?:public|private|protected|static|abstract|final)\s+)*(?:function\s+(\w+)|(?:class|interface|trait|enum)\s+(\w+))/,
    preamble: /^\s*(\/\/|\/\*|\*|#\[)/,
  },
  shell: { declaration: /^(?:function\s+)?([\w-]+)\s*\(\)\s*\{?/, preamble: /^\s*#/ },
  markdown: { declaration: /^#{1,3}\s+(.+)$/, preamble: /(?!)/ },
}

/** The declaration rules of a language (by name, any case), or undefined to cut by line windows. */
export function structureOf(language: string | undefined): Structure | undefined {
  return language === undefined ? undefined : STRUCTURES[languageKey(language)]
}

/** The declared name captured on a declaration line, when the rule captures one. */
export function declaredName(match: RegExpExecArray): string | undefined {
  for (let i = 1; i < match.length; i++) if (match[i]) return match[i]
  return undefined
}
