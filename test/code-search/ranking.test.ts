import { describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { weightedQueryTerms } from '../../plugins/code-search/terms/query.ts'
import { asksForTests, filePrior } from '../../plugins/code-search/search/ranking.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import { SYNONYM_WEIGHT } from '../../plugins/code-search/tuning.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'

describe("questions in the index's terms", () => {
  test('grammar words of a question are dropped; the rest keep weight 1', () => {
    expect([...weightedQueryTerms('Returns whether the token is expired').entries()].filter(([, w]) => w === 1).map(([t]) => t)).toEqual(['token', 'expir'])
  })

  test('a question of grammar words only still searches for them', () => {
    expect([...weightedQueryTerms('which').keys()]).toEqual(['which'])
  })

  test('words bring the words code uses for the same idea, at a lower weight', () => {
    const terms = weightedQueryTerms('load settings')
    expect(terms.get('load')).toBe(1)
    expect(terms.get('set')).toBe(1)
    expect(terms.get('config')).toBe(SYNONYM_WEIGHT)
    expect(terms.get('read')).toBe(SYNONYM_WEIGHT)
    expect(weightedQueryTerms('init msg').get('messag')).toBe(SYNONYM_WEIGHT)
    expect(weightedQueryTerms('initialize').get('init')).toBe(SYNONYM_WEIGHT)
  })

  test('synonyms follow the word as written, not its stem: "set" is not "settings"', () => {
    expect(weightedQueryTerms('set value').has('config')).toBe(false)
    expect(weightedQueryTerms('messages').get('msg')).toBe(SYNONYM_WEIGHT)
  })

  test("a word the question uses keeps its own weight even when it is another word's synonym", () => {
    expect(weightedQueryTerms('config options').get('option')).toBe(1)
  })
})

describe('file priors', () => {
  test.each([
    ['src/server/config.ts', false, 1],
    ['test/config.test.ts', false, 0.5],
    ['test/config.test.ts', true, 1],
    ['pkg/config_test.go', false, 0.5],
    ['tests/test_config.py', false, 0.5],
    ['dist/app.min.js', false, 0.4],
    ['vendor/lib/config.go', false, 0.4],
    ['LICENSE', false, 0.4],
    ['CHANGELOG.md', false, 0.4],
    ['README.md', false, 0.5],
    ['index.d.ts', false, 0.5],
    ['stubs/client.pyi', false, 0.5],
    ['docs/guide.html', false, 0.5],
    ['site/index.html', false, 0.4],
    ['tests/conftest.py', false, 0.5],
    ['conftest.py', false, 0.5],
    ['examples/basic/server.ts', false, 0.7],
    ['src/sitemap.ts', false, 1],
    ['site/app.py', false, 1],
    ['lib/security.py', false, 1],
    ['SECURITY.md', false, 0.4],
    ['docs/_build/html/api.html', false, 0.4],
  ] as const)('%s (asking for tests: %s) weighs %d', (path, tests, weight) => {
    expect(filePrior(path, tests)).toBe(weight)
  })

  test('a question names tests with test, spec, fixture or mock', () => {
    expect(asksForTests('tests for the config loader')).toBe(true)
    expect(asksForTests('mock http server')).toBe(true)
    expect(asksForTests('load the latest settings')).toBe(false)
  })
})

const repository: RepositoryFile[] = [
  {
    path: 'src/settings.ts',
    content: 'export function loadConfig(path: string) {\n  const raw = readFileSync(path, "utf8")\n  return JSON.parse(raw)\n}\n',
  },
  {
    path: 'test/settings.test.ts',
    content:
      'test("loadConfig loads the config file", () => {\n  const config = loadConfig("config.json")\n  expect(config.port).toBe(3000)\n  expect(loadConfig("other.json")).toEqual(config)\n})\n',
  },
  {
    path: 'LICENSE',
    content: 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software to deal in it, to load and use it.\n',
  },
  { path: 'src/greeting.py', content: 'def greet(person):\n    print(f"Hello, {person.name}!")\n' },
]

describe('ranking', () => {
  const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
  const ready = index.indexFiles({ orgId: 'org-ranking', repositoryId: 'r', repositoryName: 'acme/r', files: repository })
  const top = async (query: string, mode: 'hybrid' | 'text' | 'vector') => {
    await ready
    return (await index.search({ orgId: 'org-ranking' }, { query, mode, limit: 3 })).map((r) => r.path)
  }

  test.each(['hybrid', 'text', 'vector'] as const)('%s: the definition ranks above the test that uses it more often', async (mode) => {
    expect((await top('loadConfig', mode))[0]).toBe('src/settings.ts')
  })

  test('asking for tests stops holding the test file back', async () => {
    await ready
    const scoreOf = async (query: string, path: string) =>
      (await index.search({ orgId: 'org-ranking' }, { query, mode: 'text' })).find((r) => r.path === path)?.score ?? 0
    const held = (await scoreOf('loadConfig file', 'test/settings.test.ts')) / (await scoreOf('loadConfig file', 'src/settings.ts'))
    const asked = (await scoreOf('loadConfig file test', 'test/settings.test.ts')) / (await scoreOf('loadConfig file test', 'src/settings.ts'))
    expect(asked).toBeGreaterThan(held * 1.5)
  })

  test.each(['hybrid', 'text'] as const)('%s: "load settings" finds loadConfig through the synonym table', async (mode) => {
    expect((await top('load settings', mode))[0]).toBe('src/settings.ts')
  })

  test.each(['hybrid', 'text'] as const)('%s: "say hi to a person" finds the greeting, not the licence', async (mode) => {
    expect((await top('say hi to a person', mode))[0]).toBe('src/greeting.py')
  })
})

describe('length normalisation', () => {
  // A one-line alias names FormData as the function that fills one does; with BM25's usual b = 0.75 its shortness
  // alone puts it first once the function is a couple of dozen lines long.
  const steps = Array.from({ length: 24 }, (_, i) => `  const step${i} = prepare(obj, ${i})`)
  const files: RepositoryFile[] = [
    ...Array.from({ length: 6 }, (_, k) => ({
      path: `src/misc/m${k}.js`,
      content: `export function helper${k}(a, b) {\n  const sum = a + b\n  return sum * ${k}\n}\n`,
    })),
    { path: 'src/env/classes/FormData.js', content: "export default typeof FormData !== 'undefined' ? FormData : null\n" },
    {
      path: 'src/helpers/toFormData.js',
      content: ['export function toFormData(obj, formData) {', ...steps, '  formData.append(key, obj)', '  return formData', '}'].join('\n'),
    },
  ]
  const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
  const ready = index.indexFiles({ orgId: 'org-length', repositoryId: 'r', repositoryName: 'acme/r', files })

  test('the function that fills a FormData outranks a one-line alias of FormData', async () => {
    await ready
    const results = await index.search({ orgId: 'org-length' }, { query: 'It converts an object into a FormData object', mode: 'text', limit: 2 })
    expect(results.map((r) => r.path)).toEqual(['src/helpers/toFormData.js', 'src/env/classes/FormData.js'])
  })
})

describe('whole files', () => {
  // The question's words are in one function of each file, a little more often in the second file's; but the first
  // file uses them throughout, while the second is otherwise about other things.
  const fn = (name: string, body: string[]) =>
    [
      `export function ${name}(input: Map<string, number>) {`,
      ...body,
      ...Array.from({ length: Math.max(0, 12 - body.length) }, (_, i) => `  const step${i} = input.size + ${i}`),
      '  return input',
      '}',
      '',
    ].join('\n')
  const files: RepositoryFile[] = [
    {
      path: 'src/queue.ts',
      content: [
        fn('pruneQueue', ['  const oldest = [...input.keys()][0]', '  input.delete(oldest)']),
        fn('touchRecord', ['  const entry = input.get("k")', '  input.set("k", (entry ?? 0) + 1)', '  const oldest = [...input.keys()][0]']),
        fn('listRecords', ['  const entry = [...input.entries()][0]', '  const oldest = entry[0]']),
      ].join('\n'),
    },
    {
      path: 'src/numbers.ts',
      content: [
        fn('shiftWindow', ['  const oldest = [...input.entries()][0]', '  const entry = oldest[0]', '  input.delete(entry)', '  const kept = input.size']),
        fn('sumValues', ['  let total = 0', '  for (const v of input.values()) total += v']),
        fn('maxValue', ['  let best = -Infinity', '  for (const v of input.values()) best = Math.max(best, v)']),
        fn('countKeys', ['  let n = 0', '  for (const _ of input.keys()) n++']),
        fn('minValue', ['  let least = Infinity', '  for (const v of input.values()) least = Math.min(least, v)']),
        fn('meanValue', ['  let total = 0', '  for (const v of input.values()) total += v / input.size']),
      ].join('\n'),
    },
  ]
  const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
  const ready = index.indexFiles({ orgId: 'org-files', repositoryId: 'r', repositoryName: 'acme/r', files })
  const first = async (mode: 'text' | 'hybrid') => (await index.search({ orgId: 'org-files' }, { query: 'the oldest entry', mode, limit: 1 }))[0]!.path

  test('text ranks the closer chunk first; hybrid, weighing whole files, the chunk of the file about the question', async () => {
    await ready
    expect(await first('text')).toBe('src/numbers.ts')
    expect(await first('hybrid')).toBe('src/queue.ts')
  })
})

describe('repositories of one organisation', () => {
  // A large repository of job-queue code with one short helper that happens to use the question's words, and a small
  // logging package whose code is about them: a question about the small one, naming no repository, finds it first,
  // though BM25 alone ranks the short helper of the large one first.
  const large: RepositoryFile[] = [
    ...Array.from({ length: 60 }, (_, i) => ({
      path: `src/jobs/job${i}.ts`,
      content: [
        `export function runJob${i}(queue: Queue, worker: Worker) {`,
        '  const job = queue.shift()',
        `  worker.retry(job, ${i})`,
        `  scheduler.poll(queue, { delay: ${i} })`,
        '  metrics.count(worker)',
        '}',
      ].join('\n'),
    })),
    { path: 'src/jobs/audit.ts', content: 'export const formatAuditRecord = (record: Job) => record.time + " " + record.message\n' },
  ]
  const small: RepositoryFile[] = [
    {
      path: 'logging/formatter.py',
      content: [
        'class Formatter:',
        '    def format_record(self, record):',
        '        stamp = self.format_time(record.created)',
        '        return f"{stamp} {record.levelname} {record.message}"',
        '',
        '    def format_time(self, created):',
        '        return time.strftime("%H:%M:%S", time.localtime(created))',
      ].join('\n'),
    },
    { path: 'logging/levels.py', content: 'def level_name(level):\n    return _level_names.get(level, f"Level {level}")\n' },
  ]
  const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
  const ready = (async () => {
    await index.indexFiles({ orgId: 'org-many', repositoryId: 'jobs', repositoryName: 'acme/jobs', files: large })
    await index.indexFiles({ orgId: 'org-many', repositoryId: 'logging', repositoryName: 'acme/logging', files: small })
  })()

  test.each(['hybrid', 'text', 'vector'] as const)('%s: a question about the small repository is not ruled by the large one', async (mode) => {
    await ready
    const [first] = await index.search({ orgId: 'org-many' }, { query: 'Format the record message with its time stamp', mode, limit: 3 })
    expect(first).toMatchObject({ repositoryId: 'logging', path: 'logging/formatter.py' })
  })
})
