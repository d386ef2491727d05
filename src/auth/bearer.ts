/** Where a bearer token may travel: the Authorization header, or for browsers' WebSockets a subprotocol pair. */

/** Subprotocol a browser offers before the token: `new WebSocket(url, ['bearer', token])`. */
export const BEARER_SUBPROTOCOL = 'bearer'

export interface BearerToken {
  token: string
  /** Set when the token came as a WebSocket subprotocol; the server must echo this protocol. */
  subprotocol?: string
}

export function bearerFrom(headers: Headers): BearerToken | undefined {
  const authorization = headers.get('authorization')
  if (authorization) {
    // The scheme is case-insensitive; nearly every client spells it `Bearer`, checked without a lowered copy.
    if (!authorization.startsWith('Bearer ') && (authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ')) return undefined
    const token = authorization.slice(7).trim()
    return token && !/\s/.test(token) ? { token } : undefined
  }
  const protocols = headers.get('sec-websocket-protocol')
  if (protocols) {
    const list = protocols.split(',').map((p) => p.trim())
    const at = list.indexOf(BEARER_SUBPROTOCOL)
    const token = at >= 0 ? list[at + 1] : undefined
    if (token) return { token, subprotocol: BEARER_SUBPROTOCOL }
  }
  return undefined
}
