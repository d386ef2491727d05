import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { commandHelp, parseCommand } from '../../plugins/chat/commands.ts'
import { TINY_PNG_B64 } from '../fakes/openai.ts'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from './helpers.ts'

describe('parseCommand', () => {
  test('commands only at the very start; mid-text mentions are ordinary text', () => {
    expect(parseCommand('!search bun sql')).toEqual({ name: 'search', argument: 'bun sql' })
    expect(parseCommand('  !IMAGE a red fox\non snow')).toEqual({ name: 'image', argument: 'a red fox\non snow' })
    expect(parseCommand('please !search this')).toBeUndefined()
    expect(parseCommand('!search')).toEqual({ name: 'missing-argument', command: 'search' })
    expect(parseCommand('!deploy now')).toEqual({ name: 'unknown', given: 'deploy' })
    expect(parseCommand('! not a command')).toBeUndefined()
    expect(commandHelp()).toContain('!search <query>')
  })
})

describe('commands in a chat', () => {
  let h: ChatHarness
  beforeAll(async () => {
    h = await chatHarness()
  })
  afterAll(() => h.close())

  test('!search runs a web search and answers from the results with sources', async () => {
    h.model.queue = [{ text: 'Bun has SQL built in [1].' }]
    const searchesBefore = h.search.calls
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: '!search bun sql' }] }))
    const all = chunks(events)
    expect(h.search.calls).toBe(searchesBefore + 1)
    expect(all.find((c) => c.type === 'tool-input-available')).toMatchObject({ toolName: 'web_search', input: { query: 'bun sql' } })
    expect(all.filter((c) => c.type === 'source-url').map((c) => c.url)).toEqual([
      'https://bun.sh/docs/api/sql',
      'https://bun.sh/docs/api/sqlite',
      'https://bun.sh/blog/bun-v1.2',
    ])
    expect(textOf(events)).toBe('Bun has SQL built in [1].')
    // The model was given the results to cite, and the question without the command.
    const request = h.model.completions.at(-1)!
    expect(request.messages.some((m: any) => m.role === 'system' && m.content.includes('[1] Bun SQL'))).toBe(true)
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'bun sql' })
  })

  test('!image generates an image and streams it as a file chunk (a data URL)', async () => {
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: '!image a red fox' }] }))
    const file = chunks(events).find((c) => c.type === 'file')
    expect(file).toEqual({ type: 'file', mediaType: 'image/png', url: `data:image/png;base64,${TINY_PNG_B64}` })
    const imageRequest = h.model.requests.filter((r) => r.path === '/v1/images/generations').at(-1)!
    expect(JSON.parse(imageRequest.body)).toMatchObject({ prompt: 'a red fox', n: 1 })
    expect(chunks(events).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
  })

  test('an image over the size limit is refused with a clear error chunk', async () => {
    const big = await chatHarness({ CHAT_IMAGE_MAX_BYTES: '1024' })
    big.model.image = { b64: Buffer.alloc(4096, 1).toString('base64') }
    const events = await readEvents(await big.post({ messages: [{ role: 'user', content: '!image huge' }] }))
    expect(chunks(events).find((c) => c.type === 'file')).toBeUndefined()
    expect(chunks(events).at(-1)!.errorText).toStartWith('image_too_large:')
    await big.close()
  })

  test('an unknown command answers an error chunk listing the known ones, without calling the model', async () => {
    const calls = h.model.completions.length
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: '!deploy production' }] }))
    const error = chunks(events).find((c) => c.type === 'error')!
    expect(error.errorText).toStartWith('unknown_command: !deploy is not a command.')
    expect(error.errorText).toContain('!search <query>')
    expect(error.errorText).toContain('!image <prompt>')
    expect(events.at(-1)!.chunk).toBe('[DONE]')
    expect(h.model.completions.length).toBe(calls)
  })

  test('a message that mentions !search in the middle is sent to the model as it is', async () => {
    h.model.queue = [{ text: 'It is a command.', logprobs: [-0.001, -0.001, -0.001, -0.001] }]
    const searches = h.search.calls
    const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'what does !search do here?' }] }))
    expect(textOf(events)).toBe('It is a command.')
    expect(h.model.completions.at(-1)!.messages.at(-1)).toEqual({ role: 'user', content: 'what does !search do here?' })
    expect(h.search.calls).toBe(searches)
  })
})
