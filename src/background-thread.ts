/**
 * For Worker threads doing background work (indexing, learning, compacting): their share of a busy machine's cores
 * goes to the event loop first, so a request waits for a core less while they run. On Linux a thread's nice value
 * is its own, set by its thread id; elsewhere, or where it is not allowed, the thread keeps its priority.
 */
import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'

/** The nice value of background threads: a tenth of a default thread's weight when both want the same core. */
export const BACKGROUND_NICENESS = 10

/** Lowers the calling thread's scheduling priority to BACKGROUND_NICENESS, never raising it; answers whether it is there. */
export function lowerThreadPriority(): boolean {
  try {
    // "<pid>/task/<tid>"
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop())
    if (!Number.isInteger(threadId) || threadId <= 0) return false
    if (getPriority(threadId) < BACKGROUND_NICENESS) setPriority(threadId, BACKGROUND_NICENESS)
    return getPriority(threadId) >= BACKGROUND_NICENESS
  } catch {
    return false
  }
}
