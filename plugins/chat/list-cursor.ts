/**
 * The cursor of the chat list: opaque to clients, the base64url of the last listed chat's sort key
 * (`[updatedAt, id]` as JSON). A cursor this service did not hand out is a 422 naming `cursor`.
 */
import { AppError } from '../../src/errors.ts'
import type { ChatListKey } from './store.ts'

const CHAT_ID = /^[A-Za-z0-9_-]{1,128}$/

const refused = () =>
  new AppError('validation_failed', 'cursor: is not a cursor this service handed out', {
    errors: [{ field: 'cursor', message: 'is not a cursor this service handed out' }],
  })

export const encodeChatCursor = (key: ChatListKey): string => Buffer.from(JSON.stringify([key.updatedAt, key.id])).toString('base64url')

export function decodeChatCursor(cursor: string): ChatListKey {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw refused()
  let key: unknown
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw refused()
  }
  if (!Array.isArray(key) || key.length !== 2) throw refused()
  const [updatedAt, id] = key as unknown[]
  if (typeof updatedAt !== 'number' || !Number.isSafeInteger(updatedAt) || updatedAt < 0) throw refused()
  if (typeof id !== 'string' || !CHAT_ID.test(id)) throw refused()
  // Only the exact text handed out: base64url decoding skips stray characters, which would let an edited cursor pass.
  if (encodeChatCursor({ updatedAt, id }) !== cursor) throw refused()
  return { updatedAt, id }
}
