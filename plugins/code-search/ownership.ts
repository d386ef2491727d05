/**
 * Which process holds an organisation's index, when several share Redis: one owner at a time, recorded in
 * Redis as a lease (`code-index:owner:<orgId>` = this process's id and address, SET NX PX, renewed while held,
 * deleted on a graceful close). The others send searches for it to the owner's address; when the lease has
 * expired, or its holder does not answer, the first to notice claims it (a compare-and-set on the holder it
 * found) and serves the searches itself. Ownership only decides where the index is kept: any process may still
 * load one and answer correctly, so two owners for a moment (a holder thought dead that was only slow) cost
 * memory, never a wrong answer.
 */
import type { Logger } from '../../src/log.ts'
import type { RedisManager } from '../../src/redis.ts'

export interface OwnershipOptions {
  redis: RedisManager
  logger: Logger
  /** How long a lease lives without renewal; renewed every third of it. Default 10 000 ms. */
  leaseMs?: number
}

/** Where an organisation's index is served: here, or by the holder at `url`. */
export type IndexPlace = { here: true } | { here: false; url: string; holder: string }

export interface IndexOwnership {
  /** Sets the address others reach this process at; until then it claims nothing and serves what it is asked. */
  advertise(url: string): void
  /** The owner, claiming the lease when nobody holds it. */
  locate(orgId: string): Promise<IndexPlace>
  /** Claims the lease when nobody holds it; false when another process does. */
  claim(orgId: string): Promise<boolean>
  /** Claims the lease from `holder`, who did not answer; false when someone else took it meanwhile. */
  takeOver(orgId: string, holder: string): Promise<boolean>
  /** Gives the lease up (the index was dropped here). */
  release(orgId: string): Promise<void>
  /** Called with an organisation whose lease this process lost (it expired and another took it). */
  onLost(listener: (orgId: string) => void): void
  /** Releases every lease held. */
  close(): Promise<void>
}

const DEFAULT_LEASE_MS = 10_000
const key = (orgId: string) => `code-index:owner:${orgId}`

// KEYS: lease. ARGV: expected holder, new holder, lease ms. Replaces the holder only if it is still the one expected.
const SWAP = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`
// KEYS: lease. ARGV: holder, lease ms. Renews the lease while this holder has it.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`
// KEYS: lease. ARGV: holder. Deletes the lease while this holder has it.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

/** The holder a lease names, `<process id> <address>`, read back into its address. */
const addressOf = (holder: string) => holder.slice(holder.indexOf(' ') + 1)

export function createIndexOwnership(options: OwnershipOptions): IndexOwnership {
  const { redis, logger } = options
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  const processId = crypto.randomUUID()
  const owned = new Set<string>()
  const lostListeners: ((orgId: string) => void)[] = []
  let holder: string | undefined
  let renewal: ReturnType<typeof setInterval> | undefined

  const script = (text: string, orgId: string, args: string[]) => redis.send('EVAL', [text, '1', key(orgId), ...args]).then(Number)

  const lose = (orgId: string) => {
    if (!owned.delete(orgId)) return
    logger.info('code index ownership lost to another process', { orgId })
    for (const listener of lostListeners) listener(orgId)
  }

  async function renewAll() {
    for (const orgId of owned) {
      // A renewal Redis does not answer is tried again next time; the lease may outlive a short outage.
      const renewed = await script(RENEW, orgId, [holder!, String(leaseMs)]).catch(() => undefined)
      if (renewed === 0) lose(orgId)
    }
  }

  const claimed = (orgId: string) => {
    if (!owned.has(orgId)) logger.info('code index owned here', { orgId })
    owned.add(orgId)
    return true
  }

  async function claim(orgId: string): Promise<boolean> {
    if (!holder) return false
    const set = await redis.send('SET', [key(orgId), holder, 'NX', 'PX', String(leaseMs)])
    return set === 'OK' ? claimed(orgId) : false
  }

  return {
    advertise(url) {
      holder = `${processId} ${url}`
      renewal ??= setInterval(() => void renewAll(), Math.max(100, Math.floor(leaseMs / 3)))
      renewal.unref?.()
    },
    async locate(orgId) {
      if (!holder) return { here: true }
      for (let attempt = 0; attempt < 3; attempt++) {
        const current: string | null = await redis.send('GET', [key(orgId)])
        if (current === holder) {
          claimed(orgId)
          return { here: true }
        }
        if (current) {
          if (owned.has(orgId)) lose(orgId)
          return { here: false, url: addressOf(current), holder: current }
        }
        if (await claim(orgId)) return { here: true }
        // Someone claimed it between our GET and SET: read who.
      }
      return { here: true }
    },
    claim,
    async takeOver(orgId, deadHolder) {
      if (!holder) return false
      const swapped = await script(SWAP, orgId, [deadHolder, holder, String(leaseMs)])
      if (swapped === 1) {
        logger.warn('code index owner did not answer; taken over', { orgId, previous: addressOf(deadHolder) })
        return claimed(orgId)
      }
      return claim(orgId)
    },
    async release(orgId) {
      if (!owned.delete(orgId) || !holder) return
      await script(RELEASE, orgId, [holder]).catch(() => undefined)
    },
    onLost(listener) {
      lostListeners.push(listener)
    },
    async close() {
      clearInterval(renewal)
      const held = [...owned]
      owned.clear()
      if (holder) await Promise.all(held.map((orgId) => script(RELEASE, orgId, [holder!]).catch(() => undefined)))
    },
  }
}
