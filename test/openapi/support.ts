/** The documents the service serves, walked and written out for the tools that check them. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ASYNCAPI_JSON_PATH, OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { makeApp, type TestApp } from '../helpers.ts'

export const ROOT = join(import.meta.dir, '..', '..')
const BIN = join(ROOT, 'node_modules', '.bin')

type Json = Record<string, any>

export interface Served {
  t: TestApp
  openapi: Json
  asyncapi: Json
}

/**
 * The service with every optional route switched on (metrics, CORS), and the two documents it serves.
 * `env` adds or overrides settings.
 */
export async function served(env: Record<string, string> = {}): Promise<Served> {
  const t = await makeApp({ METRICS_TOKEN: 'metrics-token-for-the-openapi-tests-0123456789', CORS_ORIGINS: 'http://app.example.test', ...env })
  const openapi = await (await t.request(OPENAPI_JSON_PATH)).json()
  const asyncapi = await (await t.request(ASYNCAPI_JSON_PATH)).json()
  return { t, openapi, asyncapi }
}

export interface Operation {
  path: string
  method: string
  operation: Json
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

export function operationsOf(doc: Json): Operation[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  )
}

/** A response with its `$ref` to components.responses followed. */
export function resolved(doc: Json, response: Json): Json {
  const ref: string | undefined = response?.$ref
  if (!ref) return response
  return ref
    .split('/')
    .slice(1)
    .reduce((node: Json, key) => node[key], doc)
}

/** A scratch directory that resolves packages from the project's node_modules; removed by `remove`. */
export function scratchDir(prefix: string): { path: string; write(name: string, text: string): string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  symlinkSync(join(ROOT, 'node_modules'), join(path, 'node_modules'), 'dir')
  return {
    path,
    write(name, text) {
      const file = join(path, name)
      mkdirSync(join(file, '..'), { recursive: true })
      writeFileSync(file, text)
      return file
    },
    remove: () => rmSync(path, { recursive: true, force: true }),
  }
}

/** Runs a tool of node_modules/.bin; its exit code and everything it printed. */
export async function runTool(tool: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const proc = Bun.spawn([join(BIN, tool), ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { exitCode, stdout, stderr, output: `${stdout}\n${stderr}` }
}

/** `tsc --noEmit -p <dir>/tsconfig.json` with a tsconfig a front-end project would have. */
export async function typecheck(dir: string, files: string[], compilerOptions: Json = {}) {
  const config = {
    compilerOptions: {
      target: 'ESNext',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: ['ESNext', 'DOM'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      types: [],
      ...compilerOptions,
    },
    files,
  }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config, null, 2))
  return runTool('tsc', ['--noEmit', '-p', join(dir, 'tsconfig.json')], { cwd: dir })
}
