import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { analyseTree } from '../../plugins/imports/analysis/analyse.ts'
import { readManifest } from '../../plugins/imports/analysis/manifests.ts'
import { bearer, makeApp, tempDir, userWithRole } from '../helpers.ts'

const dir = tempDir('analysis-tree-')
afterAll(() => dir.remove())

/** Writes `files` into a new tree (a `{ symlink }` entry becomes a link) and answers its path. */
function tree(name: string, files: Record<string, string | { symlink: string }>): string {
  const root = join(dir.path, name)
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    if (typeof content === 'string') writeFileSync(join(root, path), content)
    else symlinkSync(content.symlink, join(root, path))
  }
  return root
}

const analyse = async (root: string) => (await analyseTree(root, { maxFileBytes: 1024 * 1024 })).analysis

describe('manifests', () => {
  test("a monorepo's manifests are listed root first, then by depth, the main package always among them", async () => {
    const files: Record<string, string> = { 'package.json': JSON.stringify({ name: 'monorepo-root', devDependencies: { typescript: '5' } }), 'bun.lock': '{}' }
    // More packages than are listed, each with its lock file, deeper ones under an earlier-sorting folder.
    for (let i = 0; i < 60; i++) {
      files[`a-examples/deep/example${String(i).padStart(2, '0')}/package.json`] = JSON.stringify({ name: `example-${i}` })
      files[`a-examples/deep/example${String(i).padStart(2, '0')}/package-lock.json`] = '{}'
    }
    for (let i = 0; i < 60; i++) files[`packages/pkg${String(i).padStart(2, '0')}/package.json`] = JSON.stringify({ name: `pkg-${i}` })
    const analysis = await analyse(tree('monorepo', files))
    expect(analysis.manifests).toHaveLength(50)
    expect(analysis.manifests[0]).toMatchObject({ path: 'package.json', name: 'monorepo-root' })
    const depths = analysis.manifests.map((m) => m.path.split('/').length)
    expect(depths).toEqual([...depths].sort((a, b) => a - b))
    expect(analysis.manifests.slice(1).every((m) => m.path.startsWith('packages/'))).toBe(true)
    // Lock files name their package manager without taking a manifest's place.
    expect(analysis.packageManagers).toEqual(['bun', 'npm'])
  })

  test('pyproject.toml scripts are entry points, as a module file or a package, at the root or under src/', async () => {
    const analysis = await analyse(
      tree('python-scripts', {
        'pyproject.toml': [
          '[project]',
          'name = "tool"',
          '[project.scripts]',
          'tool = "tool.cli:main"',
          'tool-admin = "tool.admin:run"',
          '[project.gui-scripts]',
          'tool-gui = "tool_gui:start"',
          '[tool.poetry.scripts]',
          'missing = "nowhere.module:main"',
        ].join('\n'),
        'src/tool/cli.py': 'def main():\n    pass\n',
        'src/tool/admin/__init__.py': 'def run():\n    pass\n',
        'tool_gui.py': 'def start():\n    pass\n',
      }),
    )
    expect(analysis.entryPoints).toEqual(['src/tool/admin/__init__.py', 'src/tool/cli.py', 'tool_gui.py'])
  })

  test('a pyproject.toml in a folder gives entry points relative to it', () => {
    const found = readManifest('services/api/pyproject.toml', '[project]\nname = "api"\n[project.scripts]\napi = "api.main:serve"\n')
    expect(found.entryPoints).toContain('services/api/api/main.py')
    expect(found.entryPoints).toContain('services/api/src/api/main.py')
  })
})

describe('the readme', () => {
  test('a README.md that links to a file inside the repository is summarised from that file', async () => {
    const analysis = await analyse(
      tree('readme-link', {
        'docs/README.md': '# Gadgets\n\nGadgets measures things precisely.\n',
        'README.md': { symlink: 'docs/README.md' },
      }),
    )
    expect(analysis.readme).toEqual({ path: 'README.md', title: 'Gadgets', summary: 'Gadgets measures things precisely.' })
    expect(analysis.links.entries).toEqual([{ path: 'README.md', target: 'docs/README.md' }])
  })

  test('a README.md that links out of the repository, or to nothing, gives no readme', async () => {
    const outside = join(dir.path, 'outside.md')
    writeFileSync(outside, '# Host\n\nHOST-ONLY-CONTENT\n')
    expect((await analyse(tree('readme-outside', { 'README.md': { symlink: outside }, 'a.ts': 'export {}\n' }))).readme).toBeNull()
    expect((await analyse(tree('readme-escape', { 'README.md': { symlink: '../outside.md' }, 'a.ts': 'export {}\n' }))).readme).toBeNull()
    expect((await analyse(tree('readme-dangling', { 'README.md': { symlink: 'gone.md' } }))).readme).toBeNull()
  })
})

describe('test folders', () => {
  test('common names for test folders are recognised; look-alikes are not', async () => {
    const analysis = await analyse(
      tree('tests', {
        'tests/a.py': '',
        'unit_tests/a.py': '',
        'integration-tests/a.ts': '',
        'api-tests/a.ts': '',
        'tests_e2e/a.py': '',
        'pkg/testdata/input.txt': '',
        'cypress/e2e/a.cy.ts': '',
        'app/src/androidTest/A.kt': '',
        'app/src/test/A.kt': '',
        'src/latest/a.ts': '',
        'contest/a.ts': '',
        'attestation/a.ts': '',
      }),
    )
    expect(analysis.testDirectories).toEqual([
      'api-tests',
      'app/src/androidTest',
      'app/src/test',
      'cypress',
      'cypress/e2e',
      'integration-tests',
      'pkg/testdata',
      'tests',
      'tests_e2e',
      'unit_tests',
    ])
  })
})

describe('validation messages name the limit', () => {
  test.each([
    [{ repository: 'acme/widgets', depth: 0 }, 'depth', 'must be at least 1'],
    [{ repository: 'acme/widgets', depth: 1_000_001 }, 'depth', 'must be at most 1000000'],
    [{ repository: 'acme/widgets', depth: 1.5 }, 'depth', 'must be a whole number'],
    [{ repository: '' }, 'repository', 'must be at least 1 character'],
    [{ repository: 'acme/widgets', ref: 'x'.repeat(256) }, 'ref', 'must be at most 255 characters'],
  ])('%o: %s %s', async (body, field, message) => {
    const t = await makeApp()
    try {
      const { token } = await userWithRole(t, 'member')
      const response = await t.send('POST', '/api/codehost/import', body, bearer(token))
      expect(response.status).toBe(422)
      const problem = await response.json()
      expect(problem.errors).toContainEqual({ field, message })
      expect(problem.detail).toContain(`${field}: ${message}`)
    } finally {
      await t.close()
    }
  })
})
