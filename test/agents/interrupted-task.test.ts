/** An agent task whose process died: followers elsewhere get `task_interrupted` in the task's envelope, and its state says failed. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { memoryLogger } from '../../src/log.ts'
import { createRedisTaskLog } from '../../plugins/agents/tasks/task-log.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../event-log/private-redis.ts'

if (!redisServerInstalled) console.warn('[skip] interrupted agent tasks: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('an agent task whose process died', () => {
  let server: PrivateRedis
  beforeAll(async () => void (server = await startPrivateRedis()))
  afterAll(() => server.stop())

  test('ends for its followers with task_interrupted after the messages it wrote, and is reported failed', async () => {
    const options = { url: server.url, retentionSeconds: 60, maxTaskSeconds: 60, logger: memoryLogger('error'), leaseMs: 600, pollMs: 100 }
    const running = createRedisTaskLog(options)
    const elsewhere = createRedisTaskLog(options)
    const taskId = `task_${crypto.randomUUID().replaceAll('-', '')}`
    const writer = running.open({ taskId, userId: 'u1', orgId: 'o1', command: 'debug', createdAt: Date.now() })
    expect(writer.append({ type: 'ack', id: 'c1', command: 'debug', status: 'queued' })).toBe(
      `{"type":"ack","taskId":"${taskId}","seq":1,"id":"c1","command":"debug","status":"queued"}`,
    )
    writer.update({ status: 'running' })
    writer.append({ type: 'progress', status: 'running', percent: 10 })
    await writer.written()
    const received: { text: string; seq: number; final: boolean }[] = []
    let ended!: () => void
    const done = new Promise<void>((resolve) => (ended = resolve))
    await elsewhere.follow(taskId, 0, (text, seq, final) => {
      received.push({ text, seq, final })
      if (final) ended()
    })
    // The producing process goes without ending anything.
    await running.close()
    await done
    expect(received.map((m) => [m.seq, JSON.parse(m.text).type, m.final])).toEqual([
      [1, 'ack', false],
      [2, 'progress', false],
      [3, 'error', true],
    ])
    expect(JSON.parse(received[2]!.text)).toMatchObject({ type: 'error', taskId, seq: 3, status: 'failed', code: 'task_interrupted' })
    expect(await elsewhere.meta(taskId)).toMatchObject({ taskId, status: 'failed', lastSeq: 3 })
    expect((await elsewhere.recent('u1', 5)).map((t) => t.taskId)).toEqual([taskId])
    await elsewhere.close()
  }, 120_000)
})
