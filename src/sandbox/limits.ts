/** The ceilings one sandbox run is held to, and how a request's own values combine with the configured ones. */

export interface SandboxLimits {
  /** Wall-clock time from launch to the end of the run, in milliseconds. */
  readonly timeoutMs: number
  /** Memory of the whole process tree (and the files it writes, which live in memory), in MiB. */
  readonly memoryMb: number
  /** Bytes of stdout and stderr kept; reaching it stops the run. */
  readonly maxOutputBytes: number
  /** Tasks (processes and their threads) alive at once; Bun itself uses a handful of threads. */
  readonly maxProcesses: number
}

/** Used when the service passes no defaults: the same values as the SANDBOX_* variables' defaults. */
export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = Object.freeze({
  timeoutMs: 10_000,
  memoryMb: 256,
  maxOutputBytes: 256 * 1024,
  maxProcesses: 64,
})

/** Below these Bun cannot start or report anything useful, so smaller values are raised to them. */
export const MIN_SANDBOX_LIMITS: SandboxLimits = Object.freeze({
  timeoutMs: 100,
  memoryMb: 32,
  maxOutputBytes: 1024,
  maxProcesses: 16,
})

type LimitOverrides = Partial<Record<keyof SandboxLimits, number | undefined>>

/**
 * The limits of one run: a request may lower any configured limit but never raise it, so a caller
 * holding user input cannot buy more time or memory than the operator allowed.
 */
export function resolveLimits(configured: SandboxLimits, requested: LimitOverrides = {}): SandboxLimits {
  const pick = (name: keyof SandboxLimits): number => {
    const ceiling = configured[name]
    const asked = requested[name]
    const value = asked === undefined || !Number.isFinite(asked) ? ceiling : Math.min(Math.floor(asked), ceiling)
    return Math.max(value, MIN_SANDBOX_LIMITS[name])
  }
  return Object.freeze({
    timeoutMs: pick('timeoutMs'),
    memoryMb: pick('memoryMb'),
    maxOutputBytes: pick('maxOutputBytes'),
    maxProcesses: pick('maxProcesses'),
  })
}

/** Configured limits from partial defaults, each at least its minimum. */
export function configuredLimits(defaults: LimitOverrides = {}): SandboxLimits {
  const ceilings = { ...DEFAULT_SANDBOX_LIMITS }
  for (const name of Object.keys(ceilings) as (keyof SandboxLimits)[]) {
    const given = defaults[name]
    if (given !== undefined && Number.isFinite(given)) ceilings[name] = Math.max(Math.floor(given), MIN_SANDBOX_LIMITS[name])
  }
  return Object.freeze(ceilings)
}
