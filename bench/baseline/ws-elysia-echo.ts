/**
 * The agent channel's framework baseline: a bare Elysia `.ws('/ws/agent')` with no auth, no hub and no
 * validation, so the service's cost is measured against the framework it is built on. It answers
 * `{"type":"ping","id"}` with the same JSON pong the service sends, `{"type":"subscribe"}` by joining the
 * fan-out topic, and echoes anything else, `repeat` times when the message says so (a command's several
 * replies); POST /publish sends its body to every subscriber.
 */
import { Elysia } from 'elysia'

const topic = 'fan-out'

interface Incoming {
  type?: string
  id?: string
  repeat?: number
}

const app = new Elysia()
  .post(
    '/publish',
    ({ body, server }) => {
      server?.publish(topic, String(body))
      return new Response(null, { status: 204 })
    },
    { parse: 'text' },
  )
  .ws('/ws/agent', {
    message(ws, message) {
      const incoming = message as Incoming
      // Nothing is returned: Elysia would send a handler's return value as one more message.
      if (incoming?.type === 'ping') {
        ws.send({ type: 'pong', ...(incoming.id === undefined ? {} : { id: incoming.id }), time: Date.now() })
      } else if (incoming?.type === 'subscribe') {
        ws.subscribe(topic)
        ws.send({ type: 'subscribed' })
      } else {
        const text = typeof message === 'string' ? message : JSON.stringify(message)
        for (let i = 0; i < Math.min(incoming?.repeat ?? 1, 100); i++) ws.send(text)
      }
    },
  })
  .listen({ hostname: '127.0.0.1', port: 0 })

console.log(`listening ${app.server!.url.origin}`)

process.on('SIGTERM', () => {
  void app.stop(true).then(() => process.exit(0))
})
