import { describe, expect, test } from 'bun:test'
import { createSecretBox, keyBytes, SecretBoxError } from '../../src/secret-box.ts'

const rawKey = () => crypto.getRandomValues(new Uint8Array(32))
const base64Key = () => Buffer.from(rawKey()).toString('base64')

describe('secret box', () => {
  test('seals to sb1.<key id>.<iv>.<ciphertext> and opens again; equal plaintexts seal differently', async () => {
    const box = await createSecretBox({ key: base64Key() })
    const first = await box.seal('gho_secret-token')
    const second = await box.seal('gho_secret-token')
    expect(first).toMatch(new RegExp(`^sb1\\.${box.keyId}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+$`))
    expect(first).not.toBe(second)
    expect(first).not.toContain('secret-token')
    expect(await box.open(first)).toBe('gho_secret-token')
    expect(box.isStale(first)).toBe(false)
  })

  test('a value sealed for one context does not open in another, or without one', async () => {
    const box = await createSecretBox({ key: base64Key() })
    const sealed = await box.seal('token', 'integration:user-1:github:access')
    expect(await box.open(sealed, 'integration:user-1:github:access')).toBe('token')
    await expect(box.open(sealed, 'integration:user-2:github:access')).rejects.toBeInstanceOf(SecretBoxError)
    await expect(box.open(sealed)).rejects.toBeInstanceOf(SecretBoxError)
  })

  test('an altered or malformed value is refused', async () => {
    const box = await createSecretBox({ key: base64Key() })
    const sealed = await box.seal('token')
    const parts = sealed.split('.')
    const data = Buffer.from(parts[3]!, 'base64url')
    data[0] = data[0]! ^ 1
    await expect(box.open([...parts.slice(0, 3), data.toString('base64url')].join('.'))).rejects.toThrow('does not open')
    await expect(box.open('token')).rejects.toThrow('malformed')
    await expect(box.open(`sb1.${box.keyId}.short.${parts[3]}`)).rejects.toThrow('malformed')
  })

  test('rotation: the new key seals, previous keys still open, and old values are reported stale', async () => {
    const oldKey = base64Key()
    const newKey = base64Key()
    const before = await createSecretBox({ key: oldKey })
    const sealedBefore = await before.seal('token')
    const after = await createSecretBox({ key: newKey, previousKeys: [oldKey] })
    expect(after.keyId).not.toBe(before.keyId)
    expect(await after.open(sealedBefore)).toBe('token')
    expect(after.isStale(sealedBefore)).toBe(true)
    const sealedAfter = await after.seal('token')
    expect(sealedAfter.split('.')[1]).toBe(after.keyId)
    await expect(before.open(sealedAfter)).rejects.toThrow(`sealed under key ${after.keyId}`)
  })

  test('a base64 key of 32 bytes is used as is, in either alphabet; other strings are stretched with HKDF', async () => {
    const bytes = rawKey()
    expect(await keyBytes(Buffer.from(bytes).toString('base64'))).toEqual(bytes)
    expect(await keyBytes(Buffer.from(bytes).toString('base64url'))).toEqual(bytes)
    const standard = await createSecretBox({ key: Buffer.from(bytes).toString('base64') })
    const urlSafe = await createSecretBox({ key: Buffer.from(bytes).toString('base64url') })
    expect(urlSafe.keyId).toBe(standard.keyId)
    expect(await urlSafe.open(await standard.seal('x'))).toBe('x')

    const passphrase = 'a long passphrase that is not base64 at all!'
    const derived = await keyBytes(passphrase)
    expect(derived.length).toBe(32)
    expect(await keyBytes(passphrase)).toEqual(derived)
    const one = await createSecretBox({ key: passphrase })
    const two = await createSecretBox({ key: passphrase })
    expect(await two.open(await one.seal('x'))).toBe('x')
    // 44 base64 characters that decode to a length other than 32 are a passphrase too.
    expect((await keyBytes(Buffer.from(new Uint8Array(33)).toString('base64'))).length).toBe(32)
  })
})
