import { bundledPlaygroundAssets } from './bundle.ts' with { type: 'macro' }

/** Loaded on the first request for the playground, so a start from source builds the script only when it is used. */
export const PLAYGROUND_ASSETS = bundledPlaygroundAssets()
