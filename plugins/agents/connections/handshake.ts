/**
 * The WebSocket handshake fields Bun insists on (RFC 6455 section 4.2.1), checked before a connection slot is
 * reserved so a malformed upgrade is answered with a problem body instead of Bun's plain-text 400 or bare 426.
 */
import { AppError } from '../../../src/errors.ts'

/** The only protocol version Bun speaks; also advertised on a refusal, as RFC 6455 section 4.4 asks. */
export const WEBSOCKET_VERSION = '13'

// Base64 of 16 bytes: 22 characters and two pad signs (Bun, like most servers, does not insist on zero spare bits).
const KEY_PATTERN = /^[A-Za-z0-9+/]{22}==$/

/** The refusal for an upgrade request whose handshake fields Bun would reject, or undefined when they are sound. */
export function handshakeProblem(headers: Headers): AppError | undefined {
  const key = headers.get('sec-websocket-key')
  if (key === null) return new AppError('bad_request', 'The WebSocket upgrade has no Sec-WebSocket-Key header')
  if (!KEY_PATTERN.test(key)) return new AppError('bad_request', 'Sec-WebSocket-Key must be 16 random bytes in base64 (24 characters)')
  const version = headers.get('sec-websocket-version')
  if (version !== WEBSOCKET_VERSION)
    return new AppError(
      'bad_request',
      version === null
        ? 'The WebSocket upgrade has no Sec-WebSocket-Version header; send 13'
        : `Sec-WebSocket-Version ${JSON.stringify(version)} is not supported; send 13`,
      { headers: { 'sec-websocket-version': WEBSOCKET_VERSION } },
    )
  return undefined
}

/** Bun refused an upgrade that passed handshakeProblem: still a malformed handshake, named as such. */
export const refusedHandshake = () =>
  new AppError('bad_request', 'The WebSocket handshake was refused; check Sec-WebSocket-Key and Sec-WebSocket-Version', {
    headers: { 'sec-websocket-version': WEBSOCKET_VERSION },
  })
