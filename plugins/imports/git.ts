import { lazily } from '../../src/lazy.ts'

/** isomorphic-git, loaded with the first import that needs it rather than at start-up. */
export const isomorphicGit = lazily(() => import('isomorphic-git'))
