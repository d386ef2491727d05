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

interface SchemaLike {
  type?: string
  format?: string
  anyOf?: SchemaLike[]
  enum?: unknown[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
}

/** The bound a value of the right type broke, said as the limit ("must be at least 1"), or undefined. */
function brokenBound(value: unknown, schema: SchemaLike): string | undefined {
  if (typeof value === 'number') {
    if (schema.type === 'integer' && !Number.isInteger(value)) return 'must be a whole number'
    if (schema.minimum !== undefined && value < schema.minimum) return `must be at least ${schema.minimum}`
    if (schema.maximum !== undefined && value > schema.maximum) return `must be at most ${schema.maximum}`
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return `must be greater than ${schema.exclusiveMinimum}`
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return `must be less than ${schema.exclusiveMaximum}`
  }
  if (typeof value === 'string') {
    const plural = (n: number) => `${n} character${n === 1 ? '' : 's'}`
    if (schema.minLength !== undefined && value.length < schema.minLength) return `must be at least ${plural(schema.minLength)}`
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `must be at most ${plural(schema.maxLength)}`
  }
  if (Array.isArray(value)) {
    const plural = (n: number) => `${n} item${n === 1 ? '' : 's'}`
    if (schema.minItems !== undefined && value.length < schema.minItems) return `must have at least ${plural(schema.minItems)}`
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `must have at most ${plural(schema.maxItems)}`
  }
  return undefined
}

// Elysia's numeric types are unions that also accept numeric strings; name the real type.
function expectedType(schema: SchemaLike | undefined): string | undefined {
  if (!schema?.anyOf) return undefined
  const names = schema.anyOf.filter((s) => !(s.type === 'string' && s.format)).map((s) => s.type ?? 'value')
  return [...new Set(names)].join(' or ')
}

function describe(e: { message: string; path?: string; value?: unknown; schema?: SchemaLike }): string {
  if (e.message === 'Unexpected property') return 'unknown field; remove it (known fields are listed in the API reference)'
  if (e.value === undefined && e.path) return 'is required'
  if (e.schema?.enum) return `must be one of ${e.schema.enum.join(', ')}`
  // A numeric union (Elysia's numeric types) holds the bounds in its number member.
  const bound = e.schema && (brokenBound(e.value, e.schema) ?? e.schema.anyOf?.map((s) => brokenBound(e.value, s)).find(Boolean))
  if (bound) return bound
  const union = expectedType(e.schema)
  if (union) return `expected ${union}, got ${e.value === null ? 'null' : typeof e.value}`
  return e.message.charAt(0).toLowerCase() + e.message.slice(1)
}

/** Field-by-field problems of an Elysia validation failure, deduplicated and capped. */
export function validationProblems(error: ValidationError): FieldProblem[] {
  const seen = new Set<string>()
  const problems: FieldProblem[] = []
  for (const e of error.all as { path?: string; message: string; value?: unknown; schema?: SchemaLike }[]) {
    const field = fieldName(e.path, error.type)
    if (seen.has(field)) continue
    seen.add(field)
    problems.push({ field, message: describe(e) })
    if (problems.length >= 20) break
  }
  if (problems.length === 0) problems.push({ field: error.type, message: 'does not match the schema' })
  return problems
}

export function summarise(problems: FieldProblem[]): string {
  return problems.map((p) => `${p.field}: ${p.message}`).join('; ')
}
