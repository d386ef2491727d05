/**
 * package.json's `engines` names the Node.js versions on which `npm install` prints no EBADENGINE warning: every
 * installed package's own `engines.node` accepts them, and no lower floor would do. The README says the same.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './processes.ts'

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }>
}

/** Every package npm installs here with the Node.js range it declares (optional ones for other platforms are not installed). */
const declared = Object.entries(lock.packages)
  .filter(([path, entry]) => path !== '' && !Array.isArray(entry.engines) && entry.engines?.node && existsSync(join(ROOT, path)))
  .map(([path, entry]) => ({ name: path.replace(/^.*node_modules\//, ''), range: (entry.engines as { node: string }).node }))

const refusing = (version: string) => declared.filter((d) => !Bun.semver.satisfies(version, d.range)).map((d) => `${d.name} (${d.range})`)

// `^22.19.0 || ^24.0.0`: each alternative's floor and the last release of its line.
const lines = pkg.engines.node.split('||').map((part) => {
  const match = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(part)
  if (!match) throw new Error(`engines.node alternatives are written ^MAJOR.MINOR.PATCH, got "${part.trim()}"`)
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) }
})

describe(`engines.node ${pkg.engines.node}`, () => {
  test('reads the packages npm installs', () => {
    expect(declared.length).toBeGreaterThan(50)
    expect(declared.map((d) => d.name)).toContain('openai')
  })

  for (const line of lines) {
    const floor = `${line.major}.${line.minor}.${line.patch}`
    test(`every installed package accepts Node.js ${floor} and the rest of the ${line.major} line`, () => {
      expect(refusing(floor)).toEqual([])
      expect(refusing(`${line.major}.999.0`)).toEqual([])
    })
  }

  test('no lower release of the first line would do: some package asks for that floor', () => {
    const first = lines[0]!
    expect(first.minor).toBeGreaterThan(0)
    expect(refusing(`${first.major}.${first.minor - 1}.0`).length).toBeGreaterThan(0)
  })

  test('the release lines left out are ones a package refuses', () => {
    for (let major = lines[0]!.major; major <= lines.at(-1)!.major; major++)
      if (!lines.some((line) => line.major === major)) expect(refusing(`${major}.0.0`).length, `Node.js ${major}`).toBeGreaterThan(0)
  })

  test('the README states the same versions', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const [first, ...rest] = lines
    expect(readme).toContain(`Node.js ${first!.major}.${first!.minor} or later ${first!.major}.x`)
    for (const line of rest) expect(readme).toContain(`${line.major}.x`)
  })
})
