/**
 * A fake Gemini API: POST /v1beta/models/{model}:streamGenerateContent?alt=sse answers scripted responses as the
 * real API streams them (server-sent `data:` lines, each a GenerateContentResponse with `candidates[0].content.parts`
 * holding `text` or a whole `functionCall`, the last with `finishReason` and `usageMetadata`), or an HTTP error with
 * Google's error body. Requests without the scripted key (`x-goog-api-key`) are 400, as the real API answers them.
 */
import { startFakeServer, type FakeServer } from './server.ts'

export interface GoogleScript {
  text?: string
  functionCall?: { name: string; args: Record<string, unknown> }
  usage?: { prompt: number; candidates: number }
  status?: number
}

export interface FakeGoogle extends FakeServer {
  baseUrl: string
  queue: GoogleScript[]
  /** The model of each request and its parsed body, in order. */
  readonly calls: { model: string; body: Record<string, any> }[]
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\r\n\r\n`

export function startFakeGoogle(key: string): FakeGoogle {
  const calls: { model: string; body: Record<string, any> }[] = []
  const fake = {} as FakeGoogle
  const server = startFakeServer(async (request) => {
    const url = new URL(request.url)
    const match = /^\/v1beta\/models\/([^/:]+):streamGenerateContent$/.exec(url.pathname)
    if (!match || url.searchParams.get('alt') !== 'sse') return new Response('not found', { status: 404 })
    if (request.headers.get('x-goog-api-key') !== key)
      return Response.json({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } }, { status: 400 })
    const body = (await request.json()) as Record<string, any>
    calls.push({ model: match[1]!, body })
    const script = fake.queue.shift() ?? { text: 'Hello.' }
    if (script.status)
      return Response.json({ error: { code: script.status, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }, { status: script.status })
    const usage = script.usage ?? { prompt: 9, candidates: 5 }
    const usageMetadata = { promptTokenCount: usage.prompt, candidatesTokenCount: usage.candidates, totalTokenCount: usage.prompt + usage.candidates }
    const chunk = (parts: unknown[], last: boolean) =>
      data({
        candidates: [{ content: { parts, role: 'model' }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
        ...(last ? { usageMetadata } : {}),
        modelVersion: match[1],
      })
    let out = ''
    const words = script.text ? script.text.split(/(?<= )/) : []
    for (const [i, word] of words.entries()) out += chunk([{ text: word }], i === words.length - 1 && !script.functionCall)
    if (script.functionCall) out += chunk([{ functionCall: script.functionCall }], true)
    return new Response(out, { headers: { 'content-type': 'text/event-stream' } })
  })
  return Object.assign(fake, server, { baseUrl: `${server.url}/v1beta`, queue: [], calls })
}
