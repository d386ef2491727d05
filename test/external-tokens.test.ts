import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { SignJWT, exportSPKI, importJWK } from 'jose'
import { createExternalTokenVerifier, type ExternalTokenOptions } from '../src/auth/external-tokens.ts'
import { AppError } from '../src/errors.ts'
import { startOidcIssuer, type FakeOidcIssuer } from './fakes/oidc-issuer.ts'
import { startFakeServer } from './fakes/server.ts'

const AUDIENCE = 'realtime-ai-backend-api'
const DISCOVERY = '/.well-known/openid-configuration'
const JWKS = '/jwks'

let idp: FakeOidcIssuer
let otherIdp: FakeOidcIssuer

beforeAll(async () => {
  ;[idp, otherIdp] = await Promise.all([startOidcIssuer(), startOidcIssuer()])
})
afterAll(async () => {
  await Promise.all([idp.close(), otherIdp.close()])
})
// Cooldown and cache tests move the clock; every other test runs on the real one.
afterEach(() => {
  setSystemTime()
})

/** A verifier for `idp` whose every upstream request path is recorded. */
function verifierFor(overrides: Partial<ExternalTokenOptions> = {}) {
  const paths: string[] = []
  const recordingFetch = Object.assign(
    (input: string | URL | Request, init?: RequestInit) => {
      paths.push(new URL(input instanceof Request ? input.url : input).pathname)
      return fetch(input, init)
    },
    { preconnect: fetch.preconnect },
  )
  const verifier = createExternalTokenVerifier({ issuer: idp.url, audience: AUDIENCE, fetch: recordingFetch, ...overrides })
  return { verifier, requested: (path: string) => paths.filter((p) => p === path).length }
}

type Verifier = ReturnType<typeof verifierFor>['verifier']

const now = () => Math.floor(Date.now() / 1000)
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

function userToken(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}, from = idp) {
  return from.token({ kid: from.kid, header, claims: { sub: 'user-1', aud: AUDIENCE, ...claims } })
}

function userClaims() {
  return { iss: idp.url, sub: 'user-1', aud: AUDIENCE, iat: now(), exp: now() + 600 }
}

async function expectRefused(verifier: Verifier, token: string, reason: string) {
  const error = await verifier.verify(token).then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(error).toBeInstanceOf(AppError)
  expect(error).toMatchObject({ code: 'invalid_token', message: reason })
}

function advanceClock(ms: number) {
  setSystemTime(new Date(Date.now() + ms))
}

describe('accepted tokens', () => {
  test('a valid RS256 token yields the subject and its claims, after one discovery and one key fetch', async () => {
    const { verifier, requested } = verifierFor()
    const identity = await verifier.verify(await userToken({ email: 'ada@example.com', scope: 'chat:write', role: 'member' }))
    expect(identity).toMatchObject({ issuer: idp.url, subject: 'user-1', email: 'ada@example.com' })
    expect(identity.claims).toMatchObject({ iss: idp.url, aud: AUDIENCE, scope: 'chat:write', role: 'member' })

    await verifier.verify(await userToken())
    expect(requested(DISCOVERY)).toBe(1)
    expect(requested(JWKS)).toBe(1)
    expect(verifier.jwksFetches()).toBe(1)
  })

  test('a configured issuer with a trailing slash is the same issuer', async () => {
    const { verifier } = verifierFor({ issuer: `${idp.url}/` })
    const identity = await verifier.verify(await userToken())
    expect(identity.issuer).toBe(idp.url)
  })
})

describe('refused claims', () => {
  test('expiry is judged with the clock tolerance', async () => {
    const { verifier } = verifierFor({ clockToleranceSeconds: 30 })
    expect((await verifier.verify(await userToken({ exp: now() - 5 }))).subject).toBe('user-1')
    await expectRefused(verifier, await userToken({ exp: now() - 120 }), 'token expired')
  })

  test('a token not valid before a time beyond the tolerance is refused', async () => {
    const { verifier } = verifierFor({ clockToleranceSeconds: 30 })
    expect((await verifier.verify(await userToken({ nbf: now() + 5 }))).subject).toBe('user-1')
    await expectRefused(verifier, await userToken({ nbf: now() + 300 }), 'token not yet valid')
  })

  test('a token for another audience is refused', async () => {
    const { verifier } = verifierFor()
    await expectRefused(verifier, await userToken({ aud: 'some-other-api' }), 'wrong audience')
  })

  test('a token from another issuer is refused, even when that issuer shares a signing key', async () => {
    const { verifier } = verifierFor()
    await expectRefused(verifier, await userToken({}, {}, otherIdp), 'unknown signing key')

    // Multi-tenant providers publish the same keys for many issuers, so the signature alone proves nothing.
    await otherIdp.server.issuer.keys.add(idp.jwk(idp.kid, 'private'))
    const sharedKeyToken = await otherIdp.token({ kid: idp.kid, claims: { sub: 'user-1', aud: AUDIENCE } })
    await expectRefused(verifier, sharedKeyToken, 'wrong issuer')
  })

  test('a token without exp or without sub is refused', async () => {
    const { verifier } = verifierFor()
    await expectRefused(verifier, await userToken({ exp: undefined }), 'missing exp claim')
    await expectRefused(verifier, await userToken({ sub: undefined }), 'missing sub claim')
  })

  test('a payload changed after signing is refused', async () => {
    const { verifier } = verifierFor()
    const [header, , signature] = (await userToken()).split('.')
    const forged = `${header}.${base64url({ ...userClaims(), sub: 'admin' })}.${signature}`
    await expectRefused(verifier, forged, 'bad signature')
  })
})

describe('refused algorithms and headers, before any key lookup', () => {
  test('an unsigned token (alg none) is refused', async () => {
    const { verifier } = verifierFor()
    const unsigned = `${base64url({ alg: 'none', typ: 'JWT', kid: idp.kid })}.${base64url(userClaims())}.`
    await expectRefused(verifier, unsigned, 'unsupported algorithm')
    expect(verifier.jwksFetches()).toBe(0)
  })

  test('an HS256 token keyed with the issuer public key is refused even when HS256 is configured', async () => {
    const { verifier } = verifierFor({ algorithms: ['RS256', 'HS256'] })
    const publicKey = (await importJWK(idp.jwk(idp.kid), 'RS256')) as CryptoKey
    const publicPem = await exportSPKI(publicKey)
    const confused = await new SignJWT(userClaims()).setProtectedHeader({ alg: 'HS256', kid: idp.kid }).sign(new TextEncoder().encode(publicPem))
    await expectRefused(verifier, confused, 'unsupported algorithm')
    expect(verifier.jwksFetches()).toBe(0)
  })

  test('HS384 and HS512 tokens are refused', async () => {
    const { verifier } = verifierFor()
    const secret = new TextEncoder().encode('a shared secret that nobody should accept here')
    for (const alg of ['HS384', 'HS512']) {
      const token = await new SignJWT(userClaims()).setProtectedHeader({ alg, kid: idp.kid }).sign(secret)
      await expectRefused(verifier, token, 'unsupported algorithm')
    }
    expect(verifier.jwksFetches()).toBe(0)
  })

  test('a token with a critical header extension is refused', async () => {
    const { verifier } = verifierFor()
    const signingKey = await importJWK(idp.jwk(idp.kid, 'private'), 'RS256')
    const token = await new SignJWT(userClaims())
      .setProtectedHeader({ alg: 'RS256', kid: idp.kid, crit: ['urn:example:binding'], 'urn:example:binding': true })
      .sign(signingKey, { crit: { 'urn:example:binding': true } })
    await expectRefused(verifier, token, 'malformed token')
    expect(verifier.jwksFetches()).toBe(0)
  })

  test('a token longer than 16 KB is refused', async () => {
    const { verifier } = verifierFor()
    await expectRefused(verifier, await userToken({ padding: 'x'.repeat(16 * 1024) }), 'malformed token')
    expect(verifier.jwksFetches()).toBe(0)
  })
})

describe('signing keys', () => {
  test('key ids shaped like a path, an SQL fragment, 10 KB, or none at all never reach the key set', async () => {
    const { verifier, requested } = verifierFor()
    await verifier.verify(await userToken())
    // Past the cooldown an unknown kid would refetch, so an unchanged count shows these never got that far.
    advanceClock(31_000)
    for (const kid of ['../../etc/passwd', "x' OR '1'='1", 'k'.repeat(10 * 1024), undefined]) {
      await expectRefused(verifier, await userToken({}, { kid }), 'malformed token')
    }
    expect(verifier.jwksFetches()).toBe(1)
    expect(requested(JWKS)).toBe(1)
  })

  test('an unknown kid past the cooldown causes exactly one refetch', async () => {
    const { verifier, requested } = verifierFor()
    await verifier.verify(await userToken())
    advanceClock(31_000)
    await expectRefused(verifier, await userToken({}, { kid: 'retired-key' }), 'unknown signing key')
    await expectRefused(verifier, await userToken({}, { kid: 'retired-key' }), 'unknown signing key')
    expect(verifier.jwksFetches()).toBe(2)
    expect(requested(JWKS)).toBe(2)
  })

  test('a flood of distinct unknown kids makes at most one key fetch per cooldown', async () => {
    const { verifier, requested } = verifierFor({ jwksCooldownMs: 60_000 })
    await verifier.verify(await userToken())
    const flood = () =>
      Promise.all(Array.from({ length: 50 }, async (_, i) => expectRefused(verifier, await userToken({}, { kid: `unknown-${i}` }), 'unknown signing key')))

    advanceClock(31_000) // past jose's default cooldown, within the configured one
    await flood()
    expect(verifier.jwksFetches()).toBe(1)

    advanceClock(30_000)
    await flood()
    expect(verifier.jwksFetches()).toBe(2)
    expect(requested(JWKS)).toBe(2)
  })

  test('a cold flood shares one discovery and one key fetch', async () => {
    const { verifier, requested } = verifierFor()
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => userToken({}, { kid: `unknown-${i}` })))
    await Promise.all(tokens.map((token) => expectRefused(verifier, token, 'unknown signing key')))
    expect(requested(DISCOVERY)).toBe(1)
    expect(verifier.jwksFetches()).toBe(1)
  })

  test('a rotated-in key is accepted once the cooldown allows a refetch', async () => {
    const { verifier } = verifierFor()
    await verifier.verify(await userToken())
    const newKid = await idp.addKey('RS256')
    const rotated = await idp.token({ kid: newKid, claims: { sub: 'user-2', aud: AUDIENCE } })
    await expectRefused(verifier, rotated, 'unknown signing key')
    expect(verifier.jwksFetches()).toBe(1)

    advanceClock(31_000)
    expect((await verifier.verify(rotated)).subject).toBe('user-2')
    expect(verifier.jwksFetches()).toBe(2)
  })

  test('keys older than the cache age are refetched before use', async () => {
    const { verifier } = verifierFor({ jwksCacheMaxAgeMs: 60_000 })
    await verifier.verify(await userToken())
    advanceClock(61_000)
    await verifier.verify(await userToken())
    expect(verifier.jwksFetches()).toBe(2)
  })
})

describe('discovery', () => {
  test('a failed discovery is retried on the next token', async () => {
    let failures = 1
    const flakyFetch = Object.assign(
      (input: string | URL | Request, init?: RequestInit) => {
        if (String(input).endsWith(DISCOVERY) && failures-- > 0) return Promise.resolve(new Response('busy', { status: 503 }))
        return fetch(input, init)
      },
      { preconnect: fetch.preconnect },
    )
    const verifier = createExternalTokenVerifier({ issuer: idp.url, audience: AUDIENCE, fetch: flakyFetch })
    const token = await userToken()
    await expect(verifier.verify(token)).rejects.toMatchObject({ code: 'upstream_error' })
    expect((await verifier.verify(token)).subject).toBe('user-1')
  })

  test('a discovery document naming another issuer is not used', async () => {
    const impostor = startFakeServer(() => Response.json({ issuer: idp.url, jwks_uri: `${idp.url}${JWKS}` }))
    try {
      const verifier = createExternalTokenVerifier({ issuer: impostor.url, audience: AUDIENCE })
      await expect(verifier.verify(await userToken())).rejects.toMatchObject({
        code: 'upstream_error',
        message: 'identity provider discovery names another issuer',
      })
      expect(verifier.jwksFetches()).toBe(0)
    } finally {
      await impostor.close()
    }
  })
})
