/**
 * The `build_site` command (build-site.ts): the develop loop builds a static site, which is checked (site-check.ts),
 * its pages loaded with their scripts in the sandbox (site-load.ts, running site-loader.ts) and then published.
 */
export { buildSiteCommand, type BuildSiteDependencies } from './build-site.ts'
