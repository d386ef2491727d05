/** What the code-search suites share around their tests: their database, and what each test leaves to undo. */
import { afterAll, afterEach, beforeAll, expect } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import type { BackendDatabase } from '../helpers.ts'

type Cleanup = () => Promise<void> | void

/** Inside a describe: cleanups a test registers run after it, the last registered first. */
export function cleanupsAfterEach(): Cleanup[] {
  const cleanups: Cleanup[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
    cleanups.length = 0
  })
  return cleanups
}

/** Inside a describe: one database opened before its tests and closed after them, and per-test cleanups. */
export function suiteBackend(open: () => Promise<BackendDatabase>): { readonly backend: BackendDatabase; readonly cleanups: Cleanup[] } {
  let backend: BackendDatabase | undefined
  beforeAll(async () => {
    backend = await open()
  })
  afterAll(() => backend?.close())
  const cleanups = cleanupsAfterEach()
  return {
    get backend() {
      if (!backend) throw new Error('the suite database is opened before its tests')
      return backend
    },
    cleanups,
  }
}

/** The AppError `work` fails with; fails the test when it succeeds or throws anything else. */
export async function failure(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AppError)
  return error as AppError
}
