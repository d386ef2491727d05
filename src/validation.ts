import type { ValidationError } from 'elysia'
import type { FieldProblem } from './errors.ts'

/** `/messages/0/role` -> `messages.0.role`; the root becomes the part that failed (`body`, `query`...). */
export function fieldName(path: string | undefined, part: string): string {
  if (!path || path === '/') return part
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.')
}

function describe(message: string, path: string | undefined, value: unknown, part: string): string {
  if (message === 'Unexpected property') return `unknown field; remove it (known fields are listed in the API reference)`
  if (value === undefined && path) return `is required`
  return message.charAt(0).toLowerCase() + message.slice(1)
}

/** Field-by-field problems of an Elysia validation failure, deduplicated and capped. */
export function validationProblems(error: ValidationError): FieldProblem[] {
  const seen = new Set<string>()
  const problems: FieldProblem[] = []
  for (const e of error.all as { path?: string; message: string; value?: unknown }[]) {
    const field = fieldName(e.path, error.type)
    if (seen.has(field)) continue
    seen.add(field)
    problems.push({ field, message: describe(e.message, e.path, e.value, error.type) })
    if (problems.length >= 20) break
  }
  if (problems.length === 0) problems.push({ field: error.type, message: 'does not match the schema' })
  return problems
}

export function summarise(problems: FieldProblem[]): string {
  return problems.map((p) => `${p.field}: ${p.message}`).join('; ')
}
