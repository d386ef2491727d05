import { Type, type IntegerOptions } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'

/**
 * An integer in a JSON body or answer. Elysia's `t.Integer` also takes a numeric string, as query and path values
 * need (they arrive as text); in JSON that would let `"5"` through and make the OpenAPI document say `string | integer`.
 */
export const integer = (options?: IntegerOptions) => Type.Integer(options)

/** Request bodies reject unknown fields (see docs/http.mdx, "Unknown fields are refused"). */
export const strictObject = <T extends Record<string, TSchema>>(properties: T, options: { description?: string } = {}) =>
  t.Object(properties, { additionalProperties: false, ...options })

/** The problem+json body every error answers with. */
export const problem = t.Object(
  {
    type: t.String(),
    title: t.String(),
    status: integer(),
    code: t.String({ description: 'Stable machine-readable error code' }),
    detail: t.String(),
    requestId: t.String(),
    errors: t.Optional(t.Array(t.Object({ field: t.String(), message: t.String() }))),
  },
  { additionalProperties: true, description: 'RFC 9457 problem details' },
)

/**
 * A string that must be one of `values`. Elysia's UnionEnum fills in its first value as a default
 * when the field is missing; an optional filter must stay unset, so the default is cleared.
 */
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, options: { description?: string } = {}) =>
  t.UnionEnum(values, { ...options, default: undefined })
