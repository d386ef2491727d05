/**
 * The agent channel's bare baseline: Bun.serve's own WebSocket at /ws/agent, no framework, no auth. Every text
 * frame is echoed, except `{"type":"subscribe"...}`, which joins the fan-out topic and answers
 * `{"type":"subscribed"}`; POST /publish sends its body to every subscriber with server.publish.
 */
const topic = 'fan-out'

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request, server) {
    const { pathname } = new URL(request.url)
    if (request.method === 'POST' && pathname === '/publish') {
      server.publish(topic, await request.text())
      return new Response(null, { status: 204 })
    }
    if (pathname === '/ws/agent' && server.upgrade(request)) return undefined
    return new Response('not found', { status: 404 })
  },
  websocket: {
    message(ws, message) {
      if (typeof message === 'string' && message.startsWith('{"type":"subscribe"')) {
        ws.subscribe(topic)
        ws.send('{"type":"subscribed"}')
        return
      }
      ws.send(message)
    },
  },
})

// The harness reads this one line to learn the port the kernel chose.
console.log(`listening ${server.url.origin}`)

process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})

export {}
