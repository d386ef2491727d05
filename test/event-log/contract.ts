/**
 * What every event log promises, written once and run against each implementation: numbering from 1, replay
 * then live, the end, retention, info, and the one interruption written when a producer goes away.
 */
import { describe, expect, test } from 'bun:test'
import type { EventLog, EventLogOptions, LoggedEvent } from '../../src/event-log/index.ts'

export const INTERRUPTED = 'INTERRUPTED'
export const END = 'END'

export const logOptions: EventLogOptions = { interruption: () => [INTERRUPTED, END], retentionMs: 60_000, maxLifeMs: 60_000, leaseMs: 600, pollMs: 100 }

/** Two instances over one shared store: two processes for the Redis log, the same one twice in memory. */
export interface Instances {
  /** The producing instance. */
  a: EventLog
  /** Another instance following from elsewhere. */
  b: EventLog
  close(): Promise<void>
}

export interface Following {
  events: LoggedEvent[]
  /** Resolves with every event once the final one arrived. */
  ended: Promise<LoggedEvent[]>
  stop(): void
}

export async function follow(log: EventLog, logId: string, afterSeq = 0): Promise<Following> {
  const events: LoggedEvent[] = []
  let resolve!: (events: LoggedEvent[]) => void
  const ended = new Promise<LoggedEvent[]>((r) => (resolve = r))
  const stop = await log.follow(logId, afterSeq, (batch) => {
    events.push(...batch)
    if (batch.at(-1)!.final) resolve(events)
  })
  if (!stop) throw new Error(`log ${logId} is unknown`)
  return { events, ended, stop }
}

export const seqs = (events: LoggedEvent[]) => events.map((e) => e.seq)
export const datas = (events: LoggedEvent[]) => events.map((e) => e.data)
const newId = () => `log_${crypto.randomUUID().replaceAll('-', '')}`

export function eventLogContract(name: string, open: () => Promise<Instances>) {
  describe(`${name} event log`, () => {
    test('events are numbered from 1; a follower gets the replay, then live events, then nothing after the final one', async () => {
      const { a, b, close } = await open()
      const id = newId()
      const producer = a.open(id, 'info-1')
      await producer.opened
      expect(producer.append('e1')).toBe(1)
      expect(producer.append('e2')).toBe(2)
      await producer.written()
      const here = await follow(a, id)
      const there = await follow(b, id, 1)
      producer.append('e3')
      await producer.end('fin')
      expect(() => producer.append('late')).toThrow()
      const all = await here.ended
      expect(seqs(all)).toEqual([1, 2, 3, 4])
      expect(datas(all)).toEqual(['e1', 'e2', 'e3', 'fin'])
      expect(all.map((e) => e.final)).toEqual([false, false, false, true])
      expect(datas(await there.ended)).toEqual(['e2', 'e3', 'fin'])
      await close()
    })

    test('a finished log is kept: it is replayed from any sequence number, with its info and last sequence number', async () => {
      const { a, b, close } = await open()
      const id = newId()
      const producer = a.open(id, 'the info')
      for (let i = 1; i <= 5; i++) producer.append(`e${i}`)
      await producer.end('fin')
      for (const log of [a, b]) {
        expect(await log.info(id)).toBe('the info')
        expect(await log.lastSeq(id)).toBe(6)
        expect(datas(await (await follow(log, id, 3)).ended)).toEqual(['e4', 'e5', 'fin'])
      }
      expect(await b.follow(newId(), 0, () => {})).toBeUndefined()
      expect(await b.lastSeq(newId())).toBeUndefined()
      await close()
    })

    test('a stopped follower gets nothing more', async () => {
      const { a, b, close } = await open()
      const id = newId()
      const producer = a.open(id, '')
      producer.append('e1')
      await producer.written()
      const there = await follow(b, id)
      while (there.events.length < 1) await Bun.sleep(10)
      there.stop()
      producer.append('e2')
      await producer.end('fin')
      await Bun.sleep(300)
      expect(datas(there.events)).toEqual(['e1'])
      await close()
    })

    test('when the producer goes away, followers everywhere end with the same single interruption, recorded with the events before it', async () => {
      const { a, b, close } = await open()
      const recorded: string[] = []
      // Each process registers its handler; in memory both instances are one.
      for (const log of new Set([a, b])) log.onInterrupted((logId, info, events) => void recorded.push(`${logId} ${info} ${datas(events).join(',')}`))
      const id = newId()
      const producer = a.open(id, 'gen')
      producer.append('e1')
      producer.append('e2')
      await producer.written()
      const followers = await Promise.all([follow(a, id), follow(b, id), follow(b, id, 1)])
      producer.abandon()
      expect(producer.lost.aborted).toBe(true)
      const [first, second, third] = await Promise.all(followers.map((f) => f.ended))
      expect(datas(first!)).toEqual(['e1', 'e2', INTERRUPTED, END])
      expect(seqs(first!)).toEqual([1, 2, 3, 4])
      expect(second).toEqual(first!)
      expect(third).toEqual(first!.slice(1))
      // Recorded by each process that read it (at least once), always with the same events.
      expect(recorded.length).toBeGreaterThanOrEqual(1)
      expect(new Set(recorded)).toEqual(new Set([`${id} gen e1,e2,${INTERRUPTED},${END}`]))
      // The interruption is the log's end for everyone who comes later, too.
      expect(datas(await (await follow(b, id, 2)).ended)).toEqual([INTERRUPTED, END])
      await close()
    })

    test('a log that ended normally is never interrupted', async () => {
      const { a, b, close } = await open()
      const id = newId()
      const producer = a.open(id, '')
      producer.append('e1')
      await producer.end('fin')
      producer.abandon()
      await Bun.sleep(1000)
      expect(datas(await (await follow(b, id)).ended)).toEqual(['e1', 'fin'])
      await close()
    })
  })
}
