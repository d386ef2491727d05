/** Shared by the first-run suites: a service with no user, and the codes its starts log. */
import { announceSetupCode } from '../../plugins/setup/index.ts'
import { SETUP_LOG_MESSAGE } from '../../plugins/setup/service.ts'
import { makeApp, type TestApp } from '../helpers.ts'

export const OWNER = { email: 'first-owner@example.com', password: 'first-owner-password', organizationName: 'Example Labs' }

export interface FirstRun extends TestApp {
  /** What a start of the service does while no user exists: stores a code and logs it. Answers that code. */
  start(): Promise<string>
  /** The start-up lines that carry a code. */
  codeLines(): Record<string, unknown>[]
}

export async function firstRunApp(env: Record<string, string> = {}): Promise<FirstRun> {
  const t = await makeApp(env)
  const codeLines = () => t.logs.filter((line) => line.msg === SETUP_LOG_MESSAGE)
  return Object.assign(t, {
    codeLines,
    async start() {
      const before = codeLines().length
      await announceSetupCode(t.deps.setup, t.deps.logger, `${t.config.publicBaseUrl}/setup`)
      const line = codeLines()[before]
      if (!line) throw new Error('no setup code was logged')
      return String(line.setupCode)
    },
  })
}

export const form = (fields: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
  body: new URLSearchParams(fields).toString(),
})
