/** The in-memory task log: replay by seq, newest-first listing, and the bound on kept tasks. */
import { describe, expect, test } from 'bun:test'
import { createMemoryTaskLog } from '../../plugins/agents/tasks/task-log.ts'

const meta = (taskId: string, userId = 'u1') => ({ taskId, userId, orgId: 'o1', command: 'status', createdAt: Date.now() })

const KEPT = 50

describe('memory task log', () => {
  test('a follower gets the messages after its seq, then live ones, and nothing after the final one', async () => {
    const log = createMemoryTaskLog({ retentionSeconds: 60 })
    const writer = log.open(meta('t1'))
    writer.append({ type: 'ack' })
    writer.append({ type: 'progress', status: 'running' })
    const seen: number[] = []
    await log.follow('t1', 1, (_, seq) => seen.push(seq))
    writer.append({ type: 'log', message: 'x' })
    writer.append({ type: 'result', status: 'succeeded' }, true)
    expect(seen).toEqual([2, 3, 4])
    expect(() => writer.append({ type: 'log', message: 'late' })).toThrow()
    expect(await log.meta('t1')).toMatchObject({ lastSeq: 4 })
    await log.close()
  })

  test(`recent tasks come newest first, and at most ${KEPT} finished ones are kept per user`, async () => {
    const log = createMemoryTaskLog({ retentionSeconds: 60, keptPerUser: KEPT })
    const total = KEPT + 5
    for (let i = 0; i < total; i++) log.open(meta(`t${i}`)).append({ type: 'result', status: 'succeeded' }, true)
    const running = log.open(meta('busy'))
    running.append({ type: 'ack' })
    const recent = await log.recent('u1', 3)
    expect(recent.map((t) => t.taskId)).toEqual(['busy', `t${total - 1}`, `t${total - 2}`])
    expect((await log.recent('u1', 10_000)).length).toBe(KEPT + 1)
    expect(await log.meta('t0')).toBeUndefined()
    expect(await log.meta(`t${total - 1}`)).toBeDefined()
    expect(await log.recent('someone-else', 5)).toEqual([])
    await log.close()
  })
})
