/**
 * Command mode: a shell command line run in an existing directory mounted read-write, with every protection of
 * a program run. The directory sits inside the hidden data directory, as agent workspaces do.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeDataDir, makeSandbox, marker, processesWith, startWitness, waitFor } from './support.ts'

const dataDir = makeDataDir()
const witness = startWitness()
const { sandbox } = makeSandbox({ hiddenPaths: [dataDir.dir] })
let counter = 0
/** A fresh workspace directory inside the hidden data directory, holding `files`. */
function workspace(files: Record<string, string> = {}) {
  const dir = join(dataDir.dir, 'workspaces', `ws-${++counter}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content)
  return dir
}

afterAll(async () => {
  await sandbox.close()
  witness.stop()
  dataDir.remove()
})

describe('sandbox commands', () => {
  test('a command reads and writes the directory it is given, under its own uid, and its files stay', async () => {
    const dir = workspace({ 'input.txt': 'hello\n' })
    const result = await sandbox.runCommand({
      directory: dir,
      command: 'pwd; id -u; cat input.txt; echo written > output.txt; mkdir -p sub && echo deep > sub/file',
    })
    expect(result.verdict).toBe('passed')
    const [cwd, uid, text] = result.output.trim().split('\n')
    expect(cwd).toBe('/tmp/sandbox')
    expect(Number(uid)).not.toBe(0)
    expect(text).toBe('hello')
    expect(readFileSync(join(dir, 'output.txt'), 'utf8')).toBe('written\n')
    expect(readFileSync(join(dir, 'sub/file'), 'utf8')).toBe('deep\n')
  })

  test("a directory's next command takes its last uid when free, so only files it does not own change owner; one running beside it gets another", async () => {
    const dir = workspace({ 'a.txt': 'a' })
    const uidOf = async (command = 'id -u') => Number((await sandbox.runCommand({ directory: dir, command })).output.trim().split('\n')[0])
    const first = await uidOf()
    // Written by the service between the commands: owned by it until the next command takes it over.
    writeFileSync(join(dir, 'b.txt'), 'b')
    const changedBefore = statSync(join(dir, 'a.txt')).ctimeMs
    await Bun.sleep(20)
    expect(await uidOf()).toBe(first)
    // A chown, even to the same owner, would have changed the inode's ctime.
    expect(statSync(join(dir, 'a.txt')).ctimeMs).toBe(changedBefore)
    expect(statSync(join(dir, 'a.txt')).uid).toBe(first)
    expect(statSync(join(dir, 'b.txt')).uid).toBe(first)
    const [beside, again] = await Promise.all([uidOf('id -u; sleep 0.3'), uidOf('sleep 0.1; id -u')])
    expect(beside).not.toBe(again)
    expect([beside, again]).toContain(first)
  })

  test('bun is on PATH and runs a test suite in the directory', async () => {
    const dir = workspace({
      'sum.ts': 'export const sum = (a: number, b: number) => a + b\n',
      'sum.test.ts': "import { expect, test } from 'bun:test'\nimport { sum } from './sum'\ntest('adds', () => expect(sum(2, 3)).toBe(5))\n",
    })
    const result = await sandbox.runCommand({ directory: dir, command: 'bun test' })
    expect(result.output).toContain('1 pass')
    expect(result.verdict).toBe('passed')
  })

  test('a failing command is failed with its exit code', async () => {
    const result = await sandbox.runCommand({ directory: workspace(), command: 'echo broken >&2; exit 7' })
    expect(result).toMatchObject({ verdict: 'failed', exitCode: 7 })
    expect(result.output).toContain('broken')
  })
})

describe('sandbox command containment', () => {
  test("the service's data directory stays hidden although the workspace lives inside it", async () => {
    const dir = workspace()
    const result = await sandbox.runCommand({
      directory: dir,
      command: `cat ${join(dataDir.dir, 'secrets.json')} || echo DENIED; ls ${dataDir.dir} || echo DENIED`,
    })
    expect(result.output).not.toContain(dataDir.secret)
    expect(result.output).not.toContain('workspaces')
    expect(result.output.match(/DENIED/g)?.length).toBe(2)
  })

  test('../ leads to the private /tmp, not to the host directory around the workspace', async () => {
    const dir = workspace()
    writeFileSync(join(dir, '..', 'neighbour.txt'), 'next door')
    const result = await sandbox.runCommand({ directory: dir, command: 'ls -a ..; cat ../neighbour.txt ../../neighbour.txt 2>&1; true' })
    expect(result.output).not.toContain('next door')
  })

  test('a symlink made inside points nowhere outside when followed from inside, and stays a link on the host', async () => {
    const dir = workspace()
    const result = await sandbox.runCommand({ directory: dir, command: `ln -s ${join(dataDir.dir, 'secrets.json')} leak; cat leak || echo DENIED` })
    expect(result.output).not.toContain(dataDir.secret)
    expect(lstatSync(join(dir, 'leak')).isSymbolicLink()).toBe(true)
    expect(readlinkSync(join(dir, 'leak'))).toBe(join(dataDir.dir, 'secrets.json'))
    // The next run's ownership change must not follow the link to the secret.
    await sandbox.runCommand({ directory: dir, command: 'true' })
    expect(statSync(join(dataDir.dir, 'secrets.json')).uid).toBe(0)
  })

  test('a hard link in the directory to a file outside it does not hand the run that file', async () => {
    const dir = workspace()
    const outside = join(dataDir.dir, 'outside-owned-by-root.txt')
    writeFileSync(outside, 'root only', { mode: 0o600 })
    linkSync(outside, join(dir, 'hard'))
    const result = await sandbox.runCommand({ directory: dir, command: 'cat hard || echo DENIED; echo changed > hard || echo DENIED' })
    expect(result.output).not.toContain('root only')
    expect(statSync(outside).uid).toBe(0)
    expect(readFileSync(outside, 'utf8')).toBe('root only')
  })

  test('a file larger than maxFileBytes cannot be written', async () => {
    const dir = workspace()
    const result = await sandbox.runCommand({ directory: dir, command: 'head -c 50000000 /dev/zero > big', maxFileBytes: 1024 * 1024 })
    expect(result.verdict).toBe('failed')
    expect(statSync(join(dir, 'big')).size).toBeLessThanOrEqual(1024 * 1024)
  })

  test('the network is unreachable', async () => {
    const result = await sandbox.runCommand({
      directory: workspace(),
      command: `bun -e "await fetch('${witness.url}').then(() => console.log('REACHED'), (e) => console.log('BLOCKED', e.code))"`,
    })
    expect(result.output).toContain('BLOCKED')
    expect(witness.hits()).toBe(0)
  })

  test('a shell fork bomb ends with process_limit and leaves nothing running', async () => {
    const mark = marker('shbomb')
    const result = await sandbox.runCommand({ directory: workspace(), command: `bomb() { bomb | bomb & }; bomb; sleep 30 # ${mark}` })
    expect(result.verdict).toBe('process_limit')
    expect(await waitFor(async () => (await processesWith(mark)).length === 0)).toBe(true)
  })

  test('an endless loop ends with timeout', async () => {
    const result = await sandbox.runCommand({ directory: workspace(), command: 'while :; do :; done', timeoutMs: 1000 })
    expect(result.verdict).toBe('timeout')
  })

  test('cancelling kills the running command and its children', async () => {
    const mark = marker('cmdcancel')
    const cancel = new AbortController()
    const dir = workspace()
    const running = sandbox.runCommand({ directory: dir, command: `sleep 60 & echo started > started; sleep 60 # ${mark}`, signal: cancel.signal })
    expect(await waitFor(() => existsSync(join(dir, 'started')))).toBe(true)
    cancel.abort()
    expect((await running).verdict).toBe('cancelled')
    expect(await waitFor(async () => (await processesWith(mark)).length === 0)).toBe(true)
  })
})
