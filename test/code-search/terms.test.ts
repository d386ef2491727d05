import { describe, expect, test } from 'bun:test'
import { createHashedEmbeddings, hashedVector } from '../../plugins/code-search/embeddings/hashed.ts'
import { buildSnippet, snippetTerms } from '../../plugins/code-search/search/snippet.ts'
import { forEachWordSpan, queryTerms, termsOf } from '../../plugins/code-search/terms/terms.ts'
import { VectorStore } from '../../plugins/code-search/vectors/vectors.ts'

describe('terms', () => {
  test('identifiers split into their words in every spelling, the compound kept without separators', () => {
    expect(termsOf('parseHTTPConfig')).toEqual(['pars', 'http', 'config', 'parsehttpconfig'])
    expect(termsOf('parse_http_config')).toEqual(['pars', 'http', 'config', 'parsehttpconfig'])
    expect(termsOf('ParseHttpConfig')).toEqual(['pars', 'http', 'config', 'parsehttpconfig'])
    expect(termsOf('XMLHttpRequest')).toEqual(['xml', 'http', 'request', 'xmlhttprequest'])
  })

  test('stop words, single letters and numbers of one digit are dropped; repeats are kept for term frequency', () => {
    expect(termsOf('const x = the value of 7 and value 42')).toEqual(['valu', 'valu', '42'])
  })

  test('non-ASCII words are words', () => {
    expect(termsOf('café_naïve 日本語')).toEqual(['café', 'naïv', 'cafénaïve', '日本語'])
  })

  test('a query is its distinct terms', () => {
    expect(queryTerms('parse the config, parse it')).toEqual(['pars', 'config'])
  })

  test('spans point at the words in the text', () => {
    const text = '  __initCache($store)'
    const spans: string[] = []
    forEachWordSpan(text, (start, end, word, compound) => spans.push(`${text.slice(start, end)}=${word}${compound ? '*' : ''}`))
    expect(spans).toEqual(['init=init', 'Cache=cache', 'initCache=initcache*', 'store=store'])
  })
})

describe('hashed embeddings', () => {
  const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

  test('vectors are deterministic, of the configured size and unit length', async () => {
    const embeddings = createHashedEmbeddings({ dimensions: 128 })
    const [a, b] = await embeddings.embed(['verifyAccessToken(token)', 'verifyAccessToken(token)'])
    expect(a!.length).toBe(128)
    expect(Array.from(a!)).toEqual(Array.from(b!))
    expect(cosine(a!, a!)).toBeCloseTo(1, 5)
    expect(embeddings.id).toBe('hashed-subwords-v1/128')
  })

  test('spellings of one identifier are near; an unrelated identifier is not', () => {
    const camel = hashedVector('verifyAccessToken', 256)
    const snake = hashedVector('verify_access_token', 256)
    const typo = hashedVector('verifyAcessToken', 256)
    const other = hashedVector('renderMarkdownLinks', 256)
    expect(cosine(camel, snake)).toBeCloseTo(1, 5)
    expect(cosine(camel, typo)).toBeGreaterThan(0.6)
    expect(cosine(camel, other)).toBeLessThan(0.2)
  })

  test('text without words embeds as the zero vector, which matches nothing', () => {
    expect(Array.from(hashedVector('{} () ;', 32)).every((x) => x === 0)).toBe(true)
  })

  test('dimensions outside 16-4096 are refused', () => {
    expect(() => createHashedEmbeddings({ dimensions: 8 })).toThrow('16-4096')
  })
})

describe('vector store', () => {
  const unit = (...values: number[]) => {
    const norm = Math.hypot(...values)
    return Float32Array.from(values, (v) => v / norm)
  }

  test('nearest answers the best positive matches in order, skipping cleared slots and rejected ones', () => {
    const store = new VectorStore(3, 2)
    store.set(0, unit(1, 0, 0))
    store.set(1, unit(1, 1, 0))
    store.set(2, unit(0, 1, 0))
    store.set(5, unit(-1, 0, 0))
    store.set(3, unit(1, 0.1, 0))
    expect(store.capacity).toBeGreaterThanOrEqual(6)
    const query = unit(1, 0, 0)
    expect(store.nearest(query, 3).map((s) => s.slot)).toEqual([0, 3, 1])
    expect(store.nearest(query, 3)[0]!.score).toBeCloseTo(1, 2)
    store.clear(0)
    expect(store.nearest(query, 2).map((s) => s.slot)).toEqual([3, 1])
    expect(store.nearest(query, 5, (slot) => slot !== 3).map((s) => s.slot)).toEqual([1])
  })

  test('survives serialisation', () => {
    const store = new VectorStore(4)
    store.set(0, unit(1, 2, 3, 4))
    store.set(2, unit(-4, 3, -2, 1))
    const copy = VectorStore.deserialise(4, store.slots, store.serialise())
    const query = unit(-4, 3, -2, 1)
    expect(copy.nearest(query, 2)).toEqual(store.nearest(query, 2))
    expect(copy.nearest(query, 1)[0]!.slot).toBe(2)
  })

  test('blocks of slots answer as one store, and their bytes are those of any block size', () => {
    const small = new VectorStore(5, 3)
    const large = new VectorStore(5)
    let seed = 7
    const random = () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
      return seed / 4294967296 - 0.5
    }
    for (const slot of [0, 1, 2, 3, 4, 8, 9, 13, 14, 15]) {
      const vector = unit(random(), random(), random(), random(), random())
      small.set(slot, vector)
      large.set(slot, vector)
    }
    small.clear(4)
    large.clear(4)
    expect(small.capacity).toBe(18)
    const query = unit(0.3, -0.2, 0.5, 0.1, -0.4)
    expect(small.nearest(query, 10)).toEqual(large.nearest(query, 10))
    expect(small.nearest(query, 10).map((s) => s.slot)).not.toContain(4)
    expect(small.serialise()).toEqual(large.serialise())
    const copy = VectorStore.deserialise(5, small.slots, small.serialise(), 4)
    expect(copy.nearest(query, 10)).toEqual(large.nearest(query, 10))
  })

  test('a vector of the wrong length is refused', () => {
    expect(() => new VectorStore(4).set(0, new Float32Array(3))).toThrow('3 dimensions')
  })
})

describe('snippets', () => {
  test('the lines where most query terms meet, dedented, escaped, matches marked by word or by part', () => {
    const content = [
      'import x from "x"',
      '',
      '/** Unrelated helper. */',
      'function helper() {}',
      '',
      'export class Store {',
      '  verifyToken(token: string): boolean {',
      '    return token.length > 0 && verify_signature(token)',
      '  }',
      '}',
    ].join('\n')
    const snippet = buildSnippet(content, snippetTerms('verify token signature'), { maxLines: 3 })
    expect(snippet).toBe(
      [
        'export class Store {',
        '  <mark>verifyToken</mark>(<mark>token</mark>: string): boolean {',
        '    return <mark>token</mark>.length &gt; 0 &amp;&amp; <mark>verify</mark>_<mark>signature</mark>(<mark>token</mark>)',
      ].join('\n'),
    )
  })

  test('a single matching part of an identifier is marked alone', () => {
    expect(buildSnippet('const parseConfig = 1', snippetTerms('config'))).toBe('const parse<mark>Config</mark> = 1')
  })

  test('markup in code cannot escape the snippet', () => {
    expect(buildSnippet('<script>alert("x")</script>', snippetTerms('alert'))).toBe('&lt;script&gt;<mark>alert</mark>(&quot;x&quot;)&lt;/script&gt;')
  })

  test('long lines are cut with an ellipsis; without matches the chunk starts the snippet', () => {
    const snippet = buildSnippet(`first ${'y'.repeat(300)}\nsecond`, snippetTerms('absent'), { maxLineChars: 20 })
    expect(snippet).toBe(`first ${'y'.repeat(14)}…\nsecond`)
  })
})
