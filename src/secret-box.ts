/**
 * Encryption of secrets at rest (provider tokens, webhook secrets...): AES-256-GCM through Web Crypto.
 *
 * A sealed value is `sb1.<keyId>.<iv>.<ciphertext+tag>` (base64url parts). The key id is derived from
 * the key itself, so rotating is: set the new key, move the old one to the previous keys, and values
 * sealed under either still open; new values are sealed under the current key only.
 *
 * An optional context (the row a value belongs to, for instance) is bound as additional authenticated
 * data: a ciphertext copied into another row does not open there.
 */

const FORMAT = 'sb1'
const IV_BYTES = 12
const KEY_BYTES = 32
const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface SecretBoxOptions {
  /**
   * The current key: base64 (standard or url-safe) of exactly 32 bytes is used as is; any other string
   * (at least 32 characters) is a passphrase turned into a 32-byte key with HKDF-SHA256.
   */
  key: string
  /** Older keys, in the same forms, kept only to open values sealed before a rotation. */
  previousKeys?: readonly string[]
}

export interface SecretBox {
  /** Id of the current key, as written into every value it seals. */
  readonly keyId: string
  seal(plaintext: string, context?: string): Promise<string>
  /** Throws when the value is malformed, was sealed under an unknown key, was altered, or the context differs. */
  open(sealed: string, context?: string): Promise<string>
  /** True when the value was sealed under a key other than the current one (re-seal it). */
  isStale(sealed: string): boolean
}

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SecretBoxError'
  }
}

const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new SecretBoxError('sealed value is malformed')
  return new Uint8Array(Buffer.from(text, 'base64url'))
}

/** The 32 key bytes of a configured key string (see SecretBoxOptions.key). */
export async function keyBytes(material: string): Promise<Uint8Array<ArrayBuffer>> {
  const trimmed = material.trim()
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
    if (bytes.length === KEY_BYTES) return new Uint8Array(bytes)
  }
  // Not a raw key: stretch the passphrase. The fixed salt and info keep the derivation stable across restarts.
  const ikm = await crypto.subtle.importKey('raw', encoder.encode(material), 'HKDF', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: encoder.encode('secret-box'), info: encoder.encode('token-encryption-key') },
    ikm,
    KEY_BYTES * 8,
  )
  return new Uint8Array(bits)
}

/** A short public id for a key: a hash of it, so it names the key without revealing it. */
async function keyIdOf(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array([...encoder.encode('key-id:'), ...bytes])))
  return Buffer.from(digest.subarray(0, 6)).toString('hex')
}

interface LoadedKey {
  id: string
  key: CryptoKey
}

async function loadKey(material: string): Promise<LoadedKey> {
  const bytes = await keyBytes(material)
  return { id: await keyIdOf(bytes), key: await crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['encrypt', 'decrypt']) }
}

function parse(sealed: string): { keyId: string; iv: Uint8Array<ArrayBuffer>; data: Uint8Array<ArrayBuffer> } {
  const parts = sealed.split('.')
  if (parts.length !== 4 || parts[0] !== FORMAT) throw new SecretBoxError('sealed value is malformed')
  const iv = fromBase64url(parts[2]!)
  if (iv.length !== IV_BYTES) throw new SecretBoxError('sealed value is malformed')
  return { keyId: parts[1]!, iv, data: fromBase64url(parts[3]!) }
}

export async function createSecretBox(options: SecretBoxOptions): Promise<SecretBox> {
  const current = await loadKey(options.key)
  const keys = new Map<string, CryptoKey>([[current.id, current.key]])
  for (const material of options.previousKeys ?? []) {
    const previous = await loadKey(material)
    if (!keys.has(previous.id)) keys.set(previous.id, previous.key)
  }
  const aad = (context: string | undefined) => (context === undefined ? {} : { additionalData: encoder.encode(context) })

  return {
    keyId: current.id,

    async seal(plaintext, context) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES))
      const data = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, ...aad(context) }, current.key, encoder.encode(plaintext))
      return `${FORMAT}.${current.id}.${base64url(iv)}.${base64url(new Uint8Array(data))}`
    },

    async open(sealed, context) {
      const { keyId, iv, data } = parse(sealed)
      const key = keys.get(keyId)
      if (!key) throw new SecretBoxError(`sealed under key ${keyId}, which is neither the current key nor a previous one`)
      try {
        return decoder.decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv, ...aad(context) }, key, data))
      } catch {
        throw new SecretBoxError('sealed value does not open: altered, or sealed for another context')
      }
    },

    isStale(sealed) {
      return parse(sealed).keyId !== current.id
    },
  }
}
