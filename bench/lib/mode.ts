/**
 * `npm run bench -- --quick` (or BENCH_QUICK=1, or `--quick` after a single bench): the benches holding the
 * headline figures, each with fewer rounds, shorter windows and fewer connections, so the run fits in a few
 * minutes. The figures and their baselines are the same ones, only noisier; the spread column shows by how much.
 */
export const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1'

/** `full` in a full run, `quick` in a quick one. */
export const quickOr = <T>(full: T, quick: T): T => (QUICK ? quick : full)
