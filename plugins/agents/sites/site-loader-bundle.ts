import { bundledSiteLoader } from './site-loader-build.ts' with { type: 'macro' }

/** The page loader and happy-dom as one script; imported on the first site check, so a start from source builds it only when used. */
export const SITE_LOADER_BUNDLE = bundledSiteLoader()
