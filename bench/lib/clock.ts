/** The clock a bench's threads share: ms since the epoch, as precise as performance.now(). */
export const epochNow = () => performance.timeOrigin + performance.now()
