import { lazily } from '../lazy.ts'

/**
 * jose (about 45 modules), loaded by the first token issued or checked rather than at start-up: /health and
 * every anonymous route answer without it.
 */
export const jose = lazily(() => import('jose'))
