import { Elysia } from 'elysia'
import type { Dependencies } from './dependencies.ts'
import { RouteIndex, requestPipeline } from './request-pipeline.ts'
import { healthPlugin } from '../plugins/health/index.ts'
import { openApiPlugin } from '../plugins/docs/index.ts'

/** Builds the whole service without listening: core plugins first, then every domain plugin. */
export function createApp(deps: Dependencies) {
  const { config, logger } = deps
  const routeIndex = new RouteIndex()
  const app = new Elysia({ normalize: false })
    .use(requestPipeline({ logger, bodyLimitBytes: config.bodyLimitBytes, trustedProxies: config.trustedProxies, routeIndex }))
    .use(openApiPlugin())
    .use(healthPlugin({ db: deps.db, lifecycle: deps.lifecycle }))
  routeIndex.load(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
