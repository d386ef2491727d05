/**
 * What a question asks for, in the index's terms. A question is often prose ("Returns the settings for a
 * request") while code says `getConfig(req)`: words that only carry grammar in a question are dropped, and
 * each remaining word brings the words code commonly uses for the same thing (a small table of synonyms
 * and abbreviations) at a lower weight, so an exact word still ranks first.
 */
import { SYNONYM_WEIGHT } from '../tuning.ts'
import { forEachWord, stem } from './terms.ts'

/** Words that say little in a question about code, beyond the stop words every text drops. */
// biome-ignore format: a word list, filled line by line rather than one word a line
const QUESTION_WORDS = new Set([
  'returns', 'returned', 'given', 'provided', 'specified', 'whether', 'which', 'who', 'whose', 'when', 'where', 'what', 'how', 'why',
  'can', 'could', 'should', 'would', 'may', 'might', 'must', 'shall', 'also', 'just', 'only', 'so', 'such', 'than', 'these', 'those',
  'there', 'their', 'them', 'they', 'we', 'you', 'your', 'our', 'us', 'he', 'she', 'his', 'her', 'not', 'no', 'do', 'does', 'did',
  'been', 'being', 'any', 'each', 'every', 'some', 'other', 'using', 'used', 'via', 'etc', 'eg', 'ie', 'one', 'all', 'out', 'up',
])

/** Groups of words code uses for one idea; each word of a question also finds the others of its group. */
const SYNONYM_GROUPS: string[][] = [
  ['config', 'configuration', 'configure', 'settings', 'setting', 'options', 'option', 'opts', 'preferences', 'prefs', 'cfg', 'conf'],
  ['init', 'initialize', 'initialise', 'initialization', 'setup', 'bootstrap'],
  ['msg', 'message'],
  ['err', 'error', 'exception', 'failure'],
  ['req', 'request'],
  ['res', 'resp', 'response', 'reply'],
  ['auth', 'authenticate', 'authentication', 'login', 'signin', 'credentials'],
  ['delete', 'remove', 'del', 'rm', 'drop'],
  ['str', 'string', 'text'],
  ['num', 'number', 'count'],
  ['int', 'integer'],
  ['arg', 'args', 'argument', 'arguments', 'param', 'params', 'parameter', 'parameters'],
  ['dir', 'directory', 'folder'],
  ['img', 'image', 'picture'],
  ['idx', 'index'],
  ['len', 'length', 'size'],
  ['ctx', 'context'],
  ['env', 'environment'],
  ['db', 'database'],
  ['conn', 'connection', 'connect'],
  ['tmp', 'temp', 'temporary'],
  ['src', 'source'],
  ['dst', 'dest', 'destination', 'target'],
  ['cb', 'callback', 'handler', 'listener'],
  ['val', 'value'],
  ['obj', 'object'],
  ['elem', 'element', 'el', 'node'],
  ['attr', 'attribute', 'attrs', 'attributes'],
  ['prop', 'property', 'props', 'properties'],
  ['doc', 'document'],
  ['pkg', 'package'],
  ['util', 'utils', 'helper', 'helpers'],
  ['max', 'maximum', 'limit'],
  ['min', 'minimum'],
  ['calc', 'calculate', 'compute'],
  ['gen', 'generate', 'create', 'make', 'build'],
  ['load', 'read', 'fetch', 'retrieve'],
  ['save', 'write', 'store', 'persist'],
  ['check', 'validate', 'verify', 'ensure', 'assert'],
  ['find', 'search', 'lookup', 'locate'],
  ['add', 'append', 'insert', 'push'],
  ['convert', 'transform', 'serialize', 'serialise', 'encode'],
  ['parse', 'decode', 'deserialize', 'deserialise'],
  ['send', 'emit', 'dispatch', 'post'],
  ['hi', 'hello', 'greet', 'greeting', 'welcome'],
  ['person', 'user', 'people', 'name'],
  ['url', 'uri', 'link', 'href'],
  ['http', 'https'],
  ['sig', 'signature', 'sign'],
  ['pwd', 'password', 'passwd'],
  ['cmd', 'command'],
  ['btn', 'button'],
  ['char', 'character', 'chars', 'characters'],
  ['dict', 'map', 'mapping', 'hash'],
  ['list', 'array', 'arr', 'items'],
  ['exec', 'execute', 'run', 'invoke', 'call'],
  ['dt', 'date', 'datetime', 'time', 'timestamp'],
  ['impl', 'implementation'],
  ['spec', 'specification'],
  ['stats', 'statistics'],
  ['info', 'information', 'details', 'metadata'],
]

// Looked up by the word as written (stems collide: "settings" and "set" share one), answering the index's
// terms (stemmed); a word in several groups gets all of them.
const synonymsByWord = new Map<string, Set<string>>()
for (const group of SYNONYM_GROUPS)
  for (const word of group) {
    let set = synonymsByWord.get(word)
    if (!set) synonymsByWord.set(word, (set = new Set()))
    for (const other of group) if (other !== word && stem(other) !== stem(word)) set.add(stem(other))
  }

/** The synonyms of a word (lower case, as written; a plural finds its singular's), as index terms. */
export function synonymsOf(word: string): ReadonlySet<string> {
  return synonymsByWord.get(word) ?? synonymsByWord.get(word.replace(/e?s$/, '')) ?? synonymsByWord.get(word.replace(/s$/, '')) ?? new Set()
}

const weighted = new Map<string, ReadonlyMap<string, number>>()

/**
 * The index terms a question looks for, each with its weight: 1 for the question's own words, SYNONYM_WEIGHT
 * for a synonym. Grammar words are dropped unless nothing else is left.
 */
export function weightedQueryTerms(query: string): ReadonlyMap<string, number> {
  let terms = weighted.get(query)
  if (terms) return terms
  const own: { word: string; term: string }[] = []
  const grammar: string[] = []
  forEachWord(query, (word, compound) => {
    const term = compound ? word : stem(word)
    if (QUESTION_WORDS.has(word)) grammar.push(term)
    else own.push({ word, term })
  })
  const result = new Map<string, number>()
  for (const term of own.length > 0 ? own.map((o) => o.term) : grammar) result.set(term, 1)
  for (const { word } of own) for (const synonym of synonymsOf(word)) if (!result.has(synonym)) result.set(synonym, SYNONYM_WEIGHT)
  if (weighted.size >= 1000) weighted.clear()
  weighted.set(query, (terms = result))
  return terms
}
