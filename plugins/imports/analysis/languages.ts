/** Language of a file from its name, the way code hosts label them; undefined for files of no known language. */

const BY_EXTENSION: Record<string, string> = {}
const add = (language: string, ...extensions: string[]) => {
  for (const extension of extensions) BY_EXTENSION[extension] = language
}
add('TypeScript', 'ts', 'tsx', 'mts', 'cts')
add('JavaScript', 'js', 'jsx', 'mjs', 'cjs')
add('Python', 'py', 'pyi', 'pyw')
add('Go', 'go')
add('Rust', 'rs')
add('Java', 'java')
add('Kotlin', 'kt', 'kts')
add('Scala', 'scala', 'sc')
add('Groovy', 'groovy', 'gradle')
add('Swift', 'swift')
add('Objective-C', 'm', 'mm')
add('C', 'c', 'h')
add('C++', 'cc', 'cpp', 'cxx', 'c++', 'hpp', 'hh', 'hxx', 'h++', 'ipp')
add('C#', 'cs', 'csx')
add('F#', 'fs', 'fsi', 'fsx')
add('Visual Basic', 'vb')
add('Ruby', 'rb', 'rake', 'gemspec')
add('PHP', 'php', 'phtml')
add('Perl', 'pl', 'pm')
add('Lua', 'lua')
add('R', 'r')
add('Dart', 'dart')
add('Elixir', 'ex', 'exs')
add('Erlang', 'erl', 'hrl')
add('Haskell', 'hs', 'lhs')
add('OCaml', 'ml', 'mli')
add('Clojure', 'clj', 'cljs', 'cljc', 'edn')
add('Julia', 'jl')
add('Zig', 'zig')
add('Nim', 'nim')
add('Crystal', 'cr')
add('Solidity', 'sol')
add('Shell', 'sh', 'bash', 'zsh', 'ksh', 'fish')
add('PowerShell', 'ps1', 'psm1', 'psd1')
add('Batchfile', 'bat', 'cmd')
add('SQL', 'sql')
add('HTML', 'html', 'htm', 'xhtml')
add('CSS', 'css')
add('SCSS', 'scss')
add('Sass', 'sass')
add('Less', 'less')
add('Vue', 'vue')
add('Svelte', 'svelte')
add('Astro', 'astro')
add('Markdown', 'md', 'markdown', 'mdx')
add('reStructuredText', 'rst')
add('JSON', 'json', 'jsonc', 'json5')
add('YAML', 'yml', 'yaml')
add('TOML', 'toml')
add('XML', 'xml', 'xsd', 'xsl', 'plist')
add('Protocol Buffer', 'proto')
add('GraphQL', 'graphql', 'gql')
add('HCL', 'tf', 'tfvars', 'hcl')
add('Nix', 'nix')
add('CMake', 'cmake')
add('Makefile', 'mk', 'mak')
add('Dockerfile', 'dockerfile')
add('Assembly', 'asm', 's')
add('WebAssembly', 'wat')
add('GLSL', 'glsl', 'vert', 'frag')
add('TeX', 'tex', 'sty')

const BY_NAME: Record<string, string> = {
  dockerfile: 'Dockerfile',
  containerfile: 'Dockerfile',
  makefile: 'Makefile',
  gnumakefile: 'Makefile',
  'cmakelists.txt': 'CMake',
  rakefile: 'Ruby',
  gemfile: 'Ruby',
  justfile: 'Just',
  'build.bazel': 'Starlark',
  build: 'Starlark',
  workspace: 'Starlark',
  jenkinsfile: 'Groovy',
  vagrantfile: 'Ruby',
}

export function languageOf(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase()
  const byName = BY_NAME[name]
  if (byName) return byName
  if (name.startsWith('dockerfile.')) return 'Dockerfile'
  const dot = name.lastIndexOf('.')
  if (dot <= 0) return undefined
  return BY_EXTENSION[name.slice(dot + 1)]
}

/** A file is binary when its first 8000 bytes hold a NUL, as git decides. */
export function isBinary(content: Uint8Array): boolean {
  return asBuffer(content).subarray(0, 8000).indexOf(0) !== -1
}

const asBuffer = (content: Uint8Array) => Buffer.from(content.buffer, content.byteOffset, content.byteLength)

export function countLines(content: Uint8Array): number {
  if (content.byteLength === 0) return 0
  let lines = 0
  let at = -1
  const buffer = asBuffer(content)
  while ((at = buffer.indexOf(10, at + 1)) !== -1) lines++
  return content[content.byteLength - 1] === 10 ? lines : lines + 1
}
