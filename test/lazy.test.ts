import { describe, expect, test } from 'bun:test'
import { lazily } from '../src/lazy.ts'

describe('a lazily loaded value', () => {
  test('is loaded at the first call, once, however many callers wait for it', async () => {
    let loads = 0
    const value = lazily(async () => ({ n: ++loads }))
    expect(loads).toBe(0)
    expect(value.loaded).toBeUndefined()
    const [a, b] = await Promise.all([value(), value()])
    expect(a).toBe(b)
    expect(await value()).toBe(a)
    expect(value.loaded).toBe(a)
    expect(loads).toBe(1)
  })

  test('a failed load is not kept: the next call tries again', async () => {
    let attempts = 0
    const value = lazily(async () => {
      if (++attempts === 1) throw new Error('first attempt fails')
      return 'loaded'
    })
    await expect(value()).rejects.toThrow('first attempt fails')
    expect(value.loaded).toBeUndefined()
    expect(await value()).toBe('loaded')
    expect(attempts).toBe(2)
  })
})
