/**
 * The OpenAPI document passes `@redocly/cli lint` (the recommended rules, with the changes redocly.yaml names and
 * explains) and `@apidevtools/swagger-parser`'s validation, with every optional route switched on.
 */
import SwaggerParser from '@apidevtools/swagger-parser'
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ROOT, runTool, scratchDir, served } from './support.ts'

const { t, openapi } = await served()
const scratch = scratchDir('openapi-lint-')
afterAll(async () => {
  scratch.remove()
  await t.close()
})

interface LintReport {
  totals: { errors: number; warnings: number }
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[]
}

async function lint(document: object): Promise<LintReport> {
  const file = scratch.write(`openapi-${crypto.randomUUID()}.json`, JSON.stringify(document))
  const run = await runTool('redocly', ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'], {
    env: { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  try {
    return JSON.parse(run.stdout) as LintReport
  } catch {
    throw new Error(`redocly printed no report (exit ${run.exitCode}): ${run.output.slice(0, 2000)}`)
  }
}

// A fresh copy each time: swagger-parser dereferences the document it is given in place.
const copy = (document: object) => JSON.parse(JSON.stringify(document))

const summary = (report: LintReport) => report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)

describe('the OpenAPI document against the validators', () => {
  test('redocly lint: no errors and no warnings', async () => {
    const report = await lint(openapi)
    expect(summary(report)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
  })

  test('redocly lint fails a document with a 3.0 keyword or an operation without a success response', async () => {
    const broken = structuredClone(openapi)
    broken.paths['/health'].get.responses = { 503: { $ref: '#/components/responses/UriTooLong' } }
    broken.components.schemas.Problem.nullable = true
    const rules = (await lint(broken)).problems.filter((p) => p.severity === 'error').map((p) => p.ruleId)
    expect(rules).toEqual(expect.arrayContaining(['struct', 'rule/operation-success-response']))
  })

  test('swagger-parser validates it, and rejects a broken one', async () => {
    await SwaggerParser.validate(copy(openapi))
    const broken = copy(openapi)
    broken.paths['/health'].get.responses['200'].content = { type: 'void' }
    await expect(SwaggerParser.validate(broken)).rejects.toThrow(/health/)
  })
})
