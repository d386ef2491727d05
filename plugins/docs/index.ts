/**
 * The documentation's face: the OpenAPI and AsyncAPI documents with their explorer, the documentation site with
 * its assistant, and the search index over the pages that the site's assistant and the MCP server share.
 */
export { ASYNCAPI_JSON_PATH, EXPLORER_CSP, OPENAPI_JSON_PATH, openApiPlugin } from './openapi.ts'
export { bundledSite, docsSitePlugin, type DocsSitePluginOptions } from './site-plugin.ts'
export { createDocsIndex, type DocsHit, type DocsIndex } from './search-index.ts'
export { loadDocsSite, type DocsPage, type DocsSite } from './site.ts'
export { pageMarkdown } from './render.ts'
export { splitSections } from './sections.ts'
export { docsSettings } from './settings.ts'
