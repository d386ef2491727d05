import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { findHedge, geometricMeanProbability, isUnsure, measureConfidence } from '../../plugins/chat/confidence.ts'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from './helpers.ts'

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
    const hedged = measureConfidence("Honestly, I’m not sure about that.", undefined, 24)
    expect(hedged).toEqual({ method: 'hedging', confidence: null, hedge: "i'm not sure" })
    expect(isUnsure(hedged, 0.8)).toBe(true)
    expect(findHedge('Paris is the capital of France.')).toBeUndefined()
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

  test('above the threshold the held-back answer is released and no search runs', async () => {
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

  test('below the threshold it says so, searches, and answers again grounded on the results', async () => {
    h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
    const searches = h.search.calls
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital of France?' }] }))
    const decision = chunks(events).find((c) => c.type === 'data-search-decision')!
    expect(decision.data).toMatchObject({ decision: 'search', method: 'logprobs', reason: 'confidence below the threshold' })
    expect(decision.data.confidence).toBeCloseTo(0.5, 6)
    expect(h.search.calls).toBe(searches + 1)
    expect(chunks(events).filter((c) => c.type === 'source-url')).toHaveLength(3)
    // The unsure draft never reaches the client.
    expect(textOf(events)).toBe('It is Paris [1].')
    const grounded = h.model.completions.at(-1)!
    expect(grounded.messages.some((m: any) => m.role === 'system' && m.content.includes('Cite the results'))).toBe(true)
  })

  test('exactly at the threshold counts as sure', async () => {
    h.model.queue = [{ text: 'one two three four', logprobs: Array(4).fill(Math.log(0.8)) }]
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'edge' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data.decision).toBe('answer')
  })

  test('without log-probabilities a hedging answer triggers the search, a plain one does not', async () => {
    h.model.queue = [{ text: "I'm not sure, perhaps Lyon." }, { text: 'Paris [1].' }]
    let events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data).toMatchObject({ decision: 'search', method: 'hedging', confidence: null })
    expect(textOf(events)).toBe('Paris [1].')
    h.model.queue = [{ text: 'Paris is the capital of France.' }]
    events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data).toMatchObject({ decision: 'answer', method: 'hedging' })
    expect(textOf(events)).toBe('Paris is the capital of France.')
  })

  test('the client can turn augmentation off for a request', async () => {
    h.model.queue = [{ text: 'Maybe Lyon.', logprobs: unsure }]
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'capital?' }], options: { searchAugmentation: false } }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')).toBeUndefined()
    expect(textOf(events)).toBe('Maybe Lyon.')
  })
})
