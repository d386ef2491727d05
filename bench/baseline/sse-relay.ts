/**
 * The chat baseline: a bare Bun SSE relay. It calls the same OpenAI-compatible upstream (UPSTREAM_URL),
 * splits its SSE lines by hand and writes each token as a UI message stream text-delta event through a
 * direct ReadableStream; no auth, no storage, no event log, no resumability.
 */
const upstream = process.env.UPSTREAM_URL!

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const body = await request.text()
    const response = await fetch(`${upstream}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let seq = 0
    return new Response(
      new ReadableStream({
        type: 'direct',
        async pull(controller) {
          let buffered = ''
          for (;;) {
            const { value, done } = await reader.read()
            if (done) break
            buffered += value
            let end: number
            while ((end = buffered.indexOf('\n\n')) >= 0) {
              const line = buffered.slice(0, end)
              buffered = buffered.slice(end + 2)
              if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
              const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content
              if (delta) controller.write(`id: ${++seq}\ndata: ${JSON.stringify({ type: 'text-delta', id: 't', delta })}\n\n`)
            }
          }
          controller.write('data: [DONE]\n\n')
          controller.close()
        },
      }),
      { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } },
    )
  },
})

console.log(`listening ${server.url.origin}`)

process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})

// A module, so its top-level names stay its own.
export {}
