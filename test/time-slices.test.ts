import { describe, expect, test } from 'bun:test'
import { InProgress, nextTurn, timeSlices } from '../src/time-slices.ts'

describe('timeSlices', () => {
  test('gives way only once a slice has run its time, calling onYield first', async () => {
    let yields = 0
    const giveWay = timeSlices(30, () => void yields++)
    await giveWay()
    expect(yields).toBe(0)
    const started = performance.now()
    while (performance.now() - started < 35);
    await giveWay()
    expect(yields).toBe(1)
    // A new slice began with that turn.
    await giveWay()
    expect(yields).toBe(1)
  })

  test('a slice of 0 gives way every time, letting timers and I/O run', async () => {
    const giveWay = timeSlices(0)
    let ran = false
    setImmediate(() => (ran = true))
    await giveWay()
    expect(ran).toBe(true)
  })
})

describe('InProgress', () => {
  test('finished is undefined when nothing is under way', () => {
    expect(new InProgress().finished(1000)).toBeUndefined()
  })

  test('finished settles when the last of what was under way ends', async () => {
    const work = new InProgress()
    work.started()
    work.started()
    let settled = false
    void work.finished(10_000)!.then(() => (settled = true))
    work.ended()
    await nextTurn()
    expect(settled).toBe(false)
    work.ended()
    await nextTurn()
    expect(settled).toBe(true)
    expect(work.finished(10_000)).toBeUndefined()
  })

  test('finished settles after atMostMs when the work goes on', async () => {
    const work = new InProgress()
    work.started()
    const started = performance.now()
    await work.finished(30)
    expect(performance.now() - started).toBeGreaterThanOrEqual(25)
    expect(performance.now() - started).toBeLessThan(5_000)
  })

  test('work started after an earlier round ended is waited for afresh', async () => {
    const work = new InProgress()
    work.started()
    work.ended()
    work.started()
    let settled = false
    void work.finished(10_000)!.then(() => (settled = true))
    await nextTurn()
    expect(settled).toBe(false)
    work.ended()
    await nextTurn()
    expect(settled).toBe(true)
  })
})
