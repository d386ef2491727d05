import { OAuth2Server } from 'oauth2-mock-server'

export interface TokenSpec {
  /** Claims merged over the issuer's defaults (iss, iat, exp, nbf); `undefined` removes one. */
  claims?: Record<string, unknown>
  /** Header members merged over `{ typ, kid }`; `alg` always follows the signing key. */
  header?: Record<string, unknown>
  /** Which of the issuer's keys signs; round-robin when omitted. */
  kid?: string
}

export interface FakeOidcIssuer {
  /** Issuer URL, also the `iss` of its tokens: http://127.0.0.1:PORT. */
  readonly url: string
  readonly server: OAuth2Server
  /** kid of the key the issuer starts with. */
  readonly kid: string
  /** A signed token with the given claims and header. */
  token(spec?: TokenSpec): Promise<string>
  /** Generates and publishes a new signing key, returning its kid. */
  addKey(alg?: string): Promise<string>
  /** JWK of one of its keys, as published or with the private members (to sign crafted tokens). */
  jwk(kid: string, part?: 'public' | 'private'): Record<string, unknown>
  close(): Promise<void>
}

/**
 * A real OpenID Connect issuer (oauth2-mock-server) on 127.0.0.1 and a free port,
 * publishing discovery and a JWKS with one RS256 key to start with.
 */
export async function startOidcIssuer(): Promise<FakeOidcIssuer> {
  const server = new OAuth2Server()
  const { kid } = await server.issuer.keys.generate('RS256')
  await server.start(0, '127.0.0.1')
  // The mock names itself http://localhost:PORT, which may resolve to ::1 where nothing listens.
  const url = `http://127.0.0.1:${server.address().port}`
  server.issuer.url = url
  return {
    url,
    server,
    kid,
    token: (spec = {}) =>
      server.issuer.buildToken({
        kid: spec.kid,
        scopesOrTransform: (header, payload) => {
          Object.assign(header, spec.header)
          for (const [name, value] of Object.entries(spec.claims ?? {})) {
            if (value === undefined) delete payload[name]
            else payload[name] = value
          }
        },
      }),
    addKey: async (alg = 'RS256') => (await server.issuer.keys.generate(alg)).kid,
    jwk(wanted, part = 'public') {
      const key = server.issuer.keys.toJSON(part === 'private').find((k) => k.kid === wanted)
      if (!key) throw new Error(`no key ${wanted}`)
      return key
    },
    close: () => server.stop(),
  }
}
