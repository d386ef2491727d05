import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { createConfidenceGauge, findHedge, geometricMeanProbability, isUnsure, measureConfidence } from '../../plugins/chat/confidence.ts'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness, type StreamEvent } from './helpers.ts'

/** The assistant message as the AI SDK client assembles it from the stream. */
async function clientMessage(events: StreamEvent[]): Promise<UIMessage> {
  let message: UIMessage | undefined
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks(events)) controller.enqueue(chunk as UIMessageChunk)
      controller.close()
    },
  })
  for await (const m of readUIMessageStream({ stream })) message = m
  return message!
}

const textParts = (message: { parts: readonly { type: string; text?: unknown }[] }) => message.parts.filter((p) => p.type === 'text').map((p) => p.text)

describe('the confidence measure', () => {
  test('is the geometric mean of the token probabilities', () => {
    expect(geometricMeanProbability([Math.log(0.5), Math.log(0.5)])).toBeCloseTo(0.5, 10)
    expect(geometricMeanProbability([Math.log(0.9), Math.log(0.4)])).toBeCloseTo(0.6, 10)
    expect(geometricMeanProbability([])).toBe(1)
    expect(geometricMeanProbability([-Infinity, 0])).toBeLessThan(1e-20)
  })

  test('counts only the first tokens, and falls back to hedging phrases without log-probabilities', () => {
    const m = measureConfidence('x', [0, 0, Math.log(0.01)], 2)
    expect(m).toEqual({ method: 'logprobs', confidence: 1, tokens: 2 })
    expect(isUnsure(m, 0.8)).toBe(false)
    const hedged = measureConfidence('Honestly, I’m not sure about that.', undefined, 24)
    expect(hedged).toEqual({ method: 'hedging', confidence: null, hedge: "i'm not sure" })
    expect(isUnsure(hedged, 0.8)).toBe(true)
    expect(findHedge('Paris is the capital of France.')).toBeUndefined()
  })

  test('while streaming, a sure answer is judged after the whole window and an unsure one as soon as it cannot recover', () => {
    const sure = createConfidenceGauge({ threshold: 0.8, tokens: 4 })
    expect([0, 1, 2].map(() => sure.add('a ', [Math.log(0.9)]))).toEqual([undefined, undefined, undefined])
    const verdict = sure.add('a ', [Math.log(0.9)])!
    expect(verdict.unsure).toBe(false)
    expect(verdict.measure).toMatchObject({ method: 'logprobs', tokens: 4 })

    // Two tokens at 0.5 put the mean over four below 0.8 whatever follows: log-probabilities are never positive.
    const unsure = createConfidenceGauge({ threshold: 0.8, tokens: 4 })
    expect(unsure.add('Maybe ', [Math.log(0.5)])).toBeUndefined()
    const early = unsure.add('Lyon ', [Math.log(0.5)])!
    expect(early).toMatchObject({ unsure: true, tokens: 2, measure: { method: 'logprobs' } })
    expect(early.measure.confidence).toBeCloseTo(0.5, 10)
  })

  test('without log-probabilities a hedge decides at once, and a plain answer after the window', () => {
    const hedging = createConfidenceGauge({ threshold: 0.8, tokens: 24 })
    expect(hedging.add("I'm ")).toBeUndefined()
    expect(hedging.add('not ')).toBeUndefined()
    expect(hedging.add('sure, ')).toMatchObject({ unsure: true, tokens: 3, measure: { method: 'hedging', hedge: "i'm not sure" } })

    const plain = createConfidenceGauge({ threshold: 0.8, tokens: 2 })
    expect(plain.add('Paris ')).toBeUndefined()
    expect(plain.add('is ')).toMatchObject({ unsure: false, tokens: 2, measure: { method: 'hedging', hedge: undefined } })

    const short = createConfidenceGauge({ threshold: 0.8, tokens: 24 })
    short.add('Paris.')
    expect(short.settle()).toMatchObject({ unsure: false, tokens: 1 })
  })
})

describe('search augmentation', () => {
  let h: ChatHarness
  beforeAll(async () => {
    h = await chatHarness({ CHAT_CONFIDENCE_TOKENS: '4' })
  })
  afterAll(() => h.close())

  const sure = Array(4).fill(Math.log(0.95))
  const unsure = Array(4).fill(Math.log(0.5))

  test('above the threshold the streamed answer stands and no search runs', async () => {
    h.model.queue = [{ text: 'Paris is the capital.', logprobs: sure }]
    const searches = h.search.calls
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital of France?' }] }))
    const decision = chunks(events).find((c) => c.type === 'data-search-decision')!
    expect(decision.data).toMatchObject({ decision: 'answer', method: 'logprobs', threshold: 0.8, tokens: 4 })
    expect(decision.data.confidence).toBeCloseTo(0.95, 6)
    expect(textOf(events)).toBe('Paris is the capital.')
    expect(h.search.calls).toBe(searches)
    expect(h.model.completions.at(-1)!.logprobs).toBe(true)
  })

  test('below the threshold it says so, withdraws the streamed draft for a client that reads reset-step, searches, and answers again grounded on the results', async () => {
    h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
    const searches = h.search.calls
    const response = await h.post(
      { id: 'chat-unsure', messages: [{ role: 'user', content: 'capital of France?' }] },
      { headers: { 'x-ui-stream-features': 'reset-step' } },
    )
    const events = await readEvents(response)
    const all = chunks(events)
    const decisionAt = all.findIndex((c) => c.type === 'data-search-decision')
    const decision = all[decisionAt]!
    expect(decision.data).toMatchObject({ decision: 'search', method: 'logprobs', reason: 'confidence below the threshold' })
    expect(decision.data.confidence).toBeCloseTo(0.5, 6)
    expect(h.search.calls).toBe(searches + 1)
    expect(all.filter((c) => c.type === 'source-url')).toHaveLength(3)
    // The draft streamed as it came, until the verdict; then the step is reset, and the decision is what stays.
    const draft = all.slice(0, decisionAt)
    expect(
      draft
        .filter((c) => c.type === 'text-delta')
        .map((c) => c.delta)
        .join(''),
    ).toBe('Maybe it ')
    expect(all[decisionAt - 1]!.type).toBe('reset-step')
    expect(
      all
        .slice(decisionAt)
        .filter((c) => c.type === 'text-delta')
        .map((c) => c.delta)
        .join(''),
    ).toBe('It is Paris [1].')
    // What the AI SDK client shows, and what is stored, hold the grounded answer only.
    const shown = await clientMessage(events)
    expect(textParts(shown)).toEqual(['It is Paris [1].'])
    expect(shown.parts.map((p) => p.type)).toEqual([
      'step-start',
      'data-search-decision',
      'tool-web_search',
      'source-url',
      'source-url',
      'source-url',
      'step-start',
      'text',
    ])
    const stored = await fetch(`${h.url}/api/chat/${response.headers.get('x-chat-id')}`, { headers: h.headers }).then((r) => r.json() as Promise<any>)
    const answer = stored.messages.at(-1)
    expect(textParts(answer)).toEqual(['It is Paris [1].'])
    expect(answer.parts.map((p: any) => p.type)).toEqual(shown.parts.map((p) => p.type))
    const grounded = h.model.completions.at(-1)!
    expect(grounded.messages.some((m: any) => m.role === 'system' && m.content.includes('Cite the results'))).toBe(true)
    expect(grounded.messages.some((m: any) => typeof m.content === 'string' && m.content.includes('Lyon'))).toBe(false)
  })

  test('the first text reaches the client before the upstream has produced the tokens the confidence is measured over', async () => {
    const gated = await chatHarness()
    try {
      let resume!: () => void
      const until = new Promise<void>((resolve) => (resume = resolve))
      const words = Array.from({ length: 30 }, (_, i) => `w${i} `)
      // The upstream sends one token, then waits: a gate that held text back for 24 tokens would deadlock here.
      gated.model.queue = [{ text: words, logprobs: words.map(() => Math.log(0.95)), pause: { after: 1, until } }]
      const response = await gated.post({ messages: [{ role: 'user', content: 'count' }] })
      const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
      const before: Record<string, any>[] = []
      while (!before.some((c) => c.type === 'text-delta')) {
        const { value, done } = await reader.read()
        if (done) throw new Error('the stream ended before any text')
        before.push(JSON.parse(value.data))
      }
      expect(before.filter((c) => c.type === 'text-delta').map((c) => c.delta)).toEqual(['w0 '])
      expect(before.some((c) => c.type === 'data-search-decision')).toBe(false)
      resume()
      const after: Record<string, any>[] = []
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        if (value.data !== '[DONE]') after.push(JSON.parse(value.data))
      }
      const all = [...before, ...after]
      const decision = all.find((c) => c.type === 'data-search-decision')!
      expect(decision.data).toMatchObject({ decision: 'answer', method: 'logprobs', tokens: 24 })
      // Decided on the 24th token, in the middle of the text that kept streaming.
      const deltasBefore = all.slice(0, all.indexOf(decision)).filter((c) => c.type === 'text-delta')
      expect(deltasBefore).toHaveLength(24)
      expect(
        all
          .filter((c) => c.type === 'text-delta')
          .map((c) => c.delta)
          .join(''),
      ).toBe(words.join(''))
      expect(all.some((c) => c.type === 'reset-step')).toBe(false)
    } finally {
      await gated.close()
    }
  }, 15_000)

  test('exactly at the threshold counts as sure', async () => {
    h.model.queue = [{ text: 'one two three four', logprobs: Array(4).fill(Math.log(0.8)) }]
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'edge' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data.decision).toBe('answer')
  })

  test('without log-probabilities a hedging answer triggers the search, a plain one does not', async () => {
    h.model.queue = [{ text: "I'm not sure, perhaps Lyon." }, { text: 'Paris [1].' }]
    let events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }], options: { unsureDraft: 'replace' } }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data).toMatchObject({ decision: 'search', method: 'hedging', confidence: null })
    // The hedge was streamed, then withdrawn as soon as it appeared.
    expect(textOf(events)).toBe("I'm not sure, Paris [1].")
    expect(textParts(await clientMessage(events))).toEqual(['Paris [1].'])
    h.model.queue = [{ text: 'Paris is the capital of France.' }]
    events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data).toMatchObject({ decision: 'answer', method: 'hedging' })
    expect(textOf(events)).toBe('Paris is the capital of France.')
  })

  test('by default the unsure draft is kept, followed by the decision and the grounded answer', async () => {
    h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital of France?' }] }))
    expect(chunks(events).some((c) => c.type === 'reset-step')).toBe(false)
    const shown = await clientMessage(events)
    expect(textParts(shown)).toEqual(['Maybe it ', 'It is Paris [1].'])
    expect(shown.parts.map((p) => p.type).slice(0, 4)).toEqual(['step-start', 'text', 'data-search-decision', 'tool-web_search'])
  })

  test('the request option keep wins over the header, and the header is read case-insensitively among other features', async () => {
    h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
    const kept = await readEvents(
      await h.post(
        { messages: [{ role: 'user', content: 'capital?' }], options: { unsureDraft: 'keep' } },
        { headers: { 'x-ui-stream-features': 'reset-step' } },
      ),
    )
    expect(chunks(kept).some((c) => c.type === 'reset-step')).toBe(false)
    h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
    const replaced = await readEvents(
      await h.post({ messages: [{ role: 'user', content: 'capital?' }] }, { headers: { 'X-UI-Stream-Features': 'other, Reset-Step' } }),
    )
    expect(chunks(replaced).some((c) => c.type === 'reset-step')).toBe(true)
  })

  test('the client can turn augmentation off for a request', async () => {
    h.model.queue = [{ text: 'Maybe Lyon.', logprobs: unsure }]
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }], options: { searchAugmentation: false } }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')).toBeUndefined()
    expect(textOf(events)).toBe('Maybe Lyon.')
  })
})
