/**
 * What a term is: code text split into stemmed words and compounds (terms.ts), and a question's words weighted with
 * their synonyms (query.ts). The index, the embeddings, the term space and the snippets all count words this way.
 */
export {
  countedTermsOf,
  countTerms,
  detachedTerm,
  forEachWordSpan,
  primeCountedTerms,
  queryTerms,
  renewVocabulary,
  stem,
  termOf,
  termsOf,
  vocabularySize,
  type CountedTerms,
  type Term,
} from './terms.ts'
export { weightedQueryTerms } from './query.ts'
