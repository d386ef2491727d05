import { bundledDocsSite } from './bundle.ts' with { type: 'macro' }

/**
 * docs.json and its pages as read when the service was bundled: the macro writes them into the code, so the
 * executable serves them from any directory. Only the executable loads this module.
 */
export const BUILT_IN_SITE = bundledDocsSite()
