/**
 * The end of a drain, when a stopping process closes its listener while a proxy keeps opening connections to
 * it. A connection the kernel accepted but the process has not yet taken is reset when the listener closes,
 * after the proxy wrote its request: nginx does not resend a POST, so its client gets a 502. Here the process
 * is descheduled (SIGSTOP) just as its drain ends, while clients keep connecting and writing POSTs: each
 * connection that the kernel accepted meanwhile must be answered, never reset.
 */
import { afterAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { tempDir } from '../helpers.ts'
import { startServiceProcess, type ServiceProcess } from './cluster.ts'

const DRAIN_MS = 600
const OPEN_EVERY_MS = 5
const WHILE_STOPPED = 60
const dataDir = tempDir('svc-listener-close-')
let service: ServiceProcess | undefined

afterAll(async () => {
  await service?.kill()
  dataDir.remove()
})

type Outcome = 'answered' | 'refused' | 'reset'

/** One connection, one POST written as soon as it connects, as a proxy does. */
function post(port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let connected = false
    let answer = ''
    const socket = connect(port, '127.0.0.1')
    const body = '{"name":"x"}'
    socket.on('connect', () => {
      connected = true
      socket.write(`POST /api/no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    })
    socket.on('data', (bytes) => {
      answer += bytes.toString()
      if (answer.includes('\r\n\r\n')) socket.destroy()
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(answer.startsWith('HTTP/1.1 ') ? 'answered' : connected ? 'reset' : 'refused'))
  })
}

test('connections that arrive while a stopping process is descheduled at the end of its drain are answered, not reset', async () => {
  service = await startServiceProcess('stopping', { DATA_DIR: dataDir.path, SHUTDOWN_DRAIN_DELAY_MS: String(DRAIN_MS) })
  const port = Number(new URL(service.url).port)
  const outcomes: Record<Outcome, number> = { answered: 0, refused: 0, reset: 0 }
  // A new connection every few milliseconds, answered or not, as a proxy opens them for its clients, until the
  // process runs again: from then on, only what waited in the queue is at stake.
  const sent: Promise<void>[] = []
  let opening = true
  const opened = (async () => {
    while (opening) {
      sent.push(post(port).then((outcome) => void outcomes[outcome]++))
      await Bun.sleep(OPEN_EVERY_MS)
    }
  })()
  await Bun.sleep(200)
  process.kill(service.pid, 'SIGTERM')
  // Descheduled from shortly before the drain ends until well after: the drain's timer is due when it runs again,
  // and the connections opened meanwhile wait in the kernel's queue.
  await Bun.sleep(DRAIN_MS - 150)
  process.kill(service.pid, 'SIGSTOP')
  opening = false
  await opened
  const before = sent.length
  // While it is stopped, a fixed number, however slowly this process runs: the kernel queues each one.
  for (let i = 0; i < WHILE_STOPPED; i++) {
    sent.push(post(port).then((outcome) => void outcomes[outcome]++))
    await Bun.sleep(OPEN_EVERY_MS)
  }
  await Bun.sleep(200)
  process.kill(service.pid, 'SIGCONT')
  await Promise.all(sent)
  expect(await service.exited).toBe(0)
  console.log(`listener close: ${JSON.stringify(outcomes)} (${before} before the stop, ${WHILE_STOPPED} while stopped)`)
  expect(before).toBeGreaterThan(0)
  expect(outcomes).toEqual({ answered: sent.length, refused: 0, reset: 0 })
  // The listener is closed once they are answered.
  expect(await post(port)).toBe('refused')
}, 120_000)
