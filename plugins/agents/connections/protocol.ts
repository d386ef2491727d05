/**
 * Reading one client frame: size, JSON, type, then the type's schema. Pure; every failure is a protocol error
 * code with a message naming what is wrong, and the client's `id` when one could be read.
 */
import { TypeCompiler, type TypeCheck } from 'elysia/type-system'
import type { TSchema } from 'elysia'
import { CLIENT_MESSAGES, COMMAND_PARAMS, COMMANDS, type ClientMessage, type CommandName, type MESSAGE_ERROR_CODES } from '../schemas.ts'

export type MessageErrorCode = keyof typeof MESSAGE_ERROR_CODES

export interface ProtocolError {
  code: MessageErrorCode
  message: string
  id?: string
  field?: string
  commands?: string[]
}

export type Decoded = { ok: true; message: ClientMessage } | { ok: false; error: ProtocolError }

const compiled = new Map<TSchema, TypeCheck<TSchema>>()
function checkerOf(schema: TSchema): TypeCheck<TSchema> {
  let check = compiled.get(schema)
  if (!check) compiled.set(schema, (check = TypeCompiler.Compile(schema)))
  return check
}

const fail = (error: ProtocolError): Decoded => ({ ok: false, error })

/** The first problem of `value` against `schema`, as a dotted field and a message; undefined when it fits. */
export function firstProblem(schema: TSchema, value: unknown, prefix = ''): { field: string; message: string } | undefined {
  const check = checkerOf(schema)
  if (check.Check(value)) return undefined
  const error = check.Errors(value).First()
  const path = (error?.path ?? '').split('/').filter(Boolean).join('.')
  const field = [prefix, path].filter(Boolean).join('.') || prefix || '(message)'
  return { field, message: error?.message ?? 'does not match the schema' }
}

/**
 * `frame` is a text or binary frame as received, or the value a framework already parsed from it (whose size
 * is then measured as its JSON text).
 */
export function decodeClientMessage(frame: unknown, maxBytes: number): Decoded {
  const raw = typeof frame === 'string' || frame instanceof Uint8Array
  const size =
    typeof frame === 'string' ? Buffer.byteLength(frame) : frame instanceof Uint8Array ? frame.byteLength : Buffer.byteLength(JSON.stringify(frame) ?? '')
  if (size > maxBytes) return fail({ code: 'message_too_large', message: `The message has ${size} bytes; at most ${maxBytes} are taken` })
  let value: unknown = frame
  if (raw)
    try {
      value = JSON.parse(typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8'))
    } catch (err) {
      return fail({ code: 'invalid_json', message: `The message is not JSON: ${(err as Error).message}` })
    }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail({ code: 'invalid_json', message: 'The message must be a JSON object with a type' })
  const record = value as Record<string, unknown>
  const id = typeof record.id === 'string' && record.id.length <= 128 ? record.id : undefined
  const type = record.type
  if (typeof type !== 'string' || !Object.hasOwn(CLIENT_MESSAGES, type))
    return fail({
      code: 'unknown_type',
      id,
      field: 'type',
      message: `type ${typeof type === 'string' ? `"${type.slice(0, 64)}" ` : ''}is not one of ${Object.keys(CLIENT_MESSAGES).join(', ')}`,
    })
  const problem = firstProblem(CLIENT_MESSAGES[type as keyof typeof CLIENT_MESSAGES], value)
  if (problem) return fail({ code: 'invalid_message', id, field: problem.field, message: `${problem.field}: ${problem.message}` })
  return { ok: true, message: value as ClientMessage }
}

export type CheckedCommand = { ok: true; command: CommandName; params: Record<string, unknown> } | { ok: false; error: ProtocolError }

/** What a command's params need beyond what its schema can say; a message naming the field, or undefined. */
function beyondSchema(command: CommandName, params: Record<string, unknown>): string | undefined {
  if (command === 'debug' && params.code === undefined && params.error === undefined) return 'params: give code, error or both'
  return undefined
}

/** The command name and its parameters checked against the command's schema, then against what the schema cannot say. */
export function checkCommand(id: string | undefined, command: string, params: Record<string, unknown> | undefined): CheckedCommand {
  if (!Object.hasOwn(COMMAND_PARAMS, command))
    return {
      ok: false,
      error: {
        code: 'unknown_command',
        id,
        field: 'command',
        commands: COMMANDS,
        message: `command "${command}" is not known; known commands: ${COMMANDS.join(', ')}`,
      },
    }
  const name = command as CommandName
  const given = params ?? {}
  const problem = firstProblem(COMMAND_PARAMS[name], given, 'params')
  if (problem) return { ok: false, error: { code: 'invalid_message', id, field: problem.field, message: `${problem.field}: ${problem.message}` } }
  const missing = beyondSchema(name, given)
  if (missing) return { ok: false, error: { code: 'invalid_message', id, field: 'params', message: missing } }
  return { ok: true, command: name, params: given }
}
