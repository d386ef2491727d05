import { Elysia, type AnyElysia } from 'elysia'
import type { Dependencies } from './dependencies.ts'
import { RouteGuards } from '../guards.ts'
import { RouteIndex, requestPipeline } from '../request-pipeline.ts'
import { corsPlugin } from '../cors.ts'
import { combineRequestObservers } from '../observability/observers.ts'
import { metricsPlugin } from '../../plugins/metrics/index.ts'
import { authPlugin } from '../../plugins/auth/index.ts'
import { docsSitePlugin, openApiPlugin } from '../../plugins/docs/index.ts'
import { healthPlugin } from '../../plugins/health/index.ts'
import { usagePlugin } from '../../plugins/usage/index.ts'
import { webSearchPlugin } from '../../plugins/web-search/index.ts'
import { codeSearchPlugin } from '../../plugins/code-search/index.ts'
import { paymentsPlugin } from '../../plugins/payments/index.ts'
import { integrationsPlugin } from '../../plugins/integrations/index.ts'
import { chatPlugin } from '../../plugins/chat/index.ts'
import { enhancedChatPlugin } from '../../plugins/enhanced-chat/index.ts'
import { publishPlugin } from '../../plugins/publish/index.ts'
import { importsPlugin } from '../../plugins/imports/index.ts'
import { agentsPlugin, workspaceRoutes } from '../../plugins/agents/index.ts'
import { mcpPlugin } from '../../plugins/mcp/index.ts'
import { mcpToolsPlugin } from '../../plugins/mcp-tools/index.ts'
import { modelsPlugin } from '../../plugins/models/index.ts'
import { filesPlugin } from '../../plugins/files/index.ts'
import { setupPlugin } from '../../plugins/setup/index.ts'
import { playgroundPlugin } from '../../plugins/playground/index.ts'
import { accountsPlugin } from '../../plugins/accounts/index.ts'

/** Builds the whole service without listening: core plugins first, then every domain plugin. */
export function createApp(deps: Dependencies) {
  const { config, logger, access, plans, rateLimits } = deps
  const origins = { origins: config.corsOrigins, publicBaseUrl: config.publicBaseUrl }
  const routeIndex = new RouteIndex()
  const routeGuards = new RouteGuards()
  // What every guarded plugin is handed: who the caller is and may do, their plan, and what their requests spend.
  const guardServices = { access, plans, rateLimits }
  // With a shared stream log another process can take over a chat stream, so shutdown hands clients over.
  const streamDrain = config.redisUrl ? { signal: deps.lifecycle.drain, retryMs: 1000 } : undefined
  // The app once built: the request pipeline asks the server it listens on for each request's peer address.
  let built: Pick<AnyElysia, 'server'> | undefined
  const app = new Elysia({
    normalize: false,
    // The path starts at the first slash after the scheme, whatever the Host header's length (a 1-3 character
    // Host would otherwise shift it); this service is served over plain HTTP behind any TLS terminator.
    handler: { standardHostname: false },
    // Agent connections: the service pings them itself (AGENT_HEARTBEAT_INTERVAL_MS); Bun's own idle timeout is
    // a backstop. Frames over 4 × AGENT_MAX_MESSAGE_BYTES close the connection (1009) before they are read.
    websocket: {
      maxPayloadLength: 4 * config.agents.maxMessageBytes,
      idleTimeout: Math.min(960, Math.ceil((2 * config.agents.idleTimeoutMs) / 1000) + 8),
      perMessageDeflate: false,
    },
  })
    .use(
      requestPipeline({
        logger,
        bodyLimitBytes: config.bodyLimitBytes,
        trustedProxies: config.trustedProxies,
        routeIndex,
        routeGuards,
        observer: combineRequestObservers([deps.metrics?.requests, deps.tracing?.requests]),
        lifecycle: deps.lifecycle,
        peerAddress: (request) => built?.server?.requestIP(request)?.address,
        logClientAddress: config.log.clientAddress,
      }),
    )
    // After the pipeline, so a preflight (answered here, before routing and any guard) carries the request id.
    .use(corsPlugin(origins))
    .use(openApiPlugin())
    .use(
      docsSitePlugin({
        publicBaseUrl: config.publicBaseUrl,
        mcpUrl: config.docs.mcpUrl,
        logger,
        // The documentation assistant asks the chat's model provider and spends its own budget per client address.
        assistant: { models: deps.models, index: deps.docsIndex, rateLimits },
      }),
    )
    .use(setupPlugin({ setup: deps.setup, codeTtlSeconds: config.setup.codeTtlSeconds, publicBaseUrl: config.publicBaseUrl }))
    .use(playgroundPlugin())
    .use(healthPlugin({ db: deps.db, lifecycle: deps.lifecycle, checks: deps.readinessChecks }))
    .use(metricsPlugin({ metrics: deps.metrics, token: config.metrics.token }))
    .use(authPlugin({ ...guardServices, allowRegistration: config.allowRegistration, publicBaseUrl: config.publicBaseUrl }))
    .use(accountsPlugin({ deletion: deps.deletion, accounts: deps.accounts, apiKeys: deps.apiKeys, resets: deps.passwordResets, ...guardServices }))
    .use(usagePlugin({ db: deps.db, meter: deps.meter, ...guardServices }))
    .use(webSearchPlugin({ webSearch: deps.webSearch, ...guardServices }))
    .use(codeSearchPlugin({ codeIndex: deps.codeIndex, meter: deps.meter, ...guardServices }))
    .use(paymentsPlugin({ payments: deps.payments, ...guardServices }))
    .use(
      integrationsPlugin({
        integrations: deps.integrations,
        ...guardServices,
        publicBaseUrl: config.publicBaseUrl,
        stateTtlSeconds: config.integrations.stateTtlSeconds,
      }),
    )
    .use(chatPlugin({ chat: deps.chat, models: deps.models, ...guardServices, drain: streamDrain }))
    .use(modelsPlugin({ models: deps.models, ...guardServices }))
    .use(filesPlugin({ files: deps.files, settings: config.files, ...guardServices }))
    .use(
      enhancedChatPlugin({
        chat: deps.chat,
        models: deps.models,
        meter: deps.meter,
        checker: deps.sandbox,
        limits: config.enhancedChat,
        ...guardServices,
        drain: streamDrain,
      }),
    )
    .use(publishPlugin({ publisher: deps.publisher, ...guardServices, logger }))
    .use(importsPlugin({ imports: deps.imports, ...guardServices }))
    .use(agentsPlugin({ hub: deps.agentConnections, access, origins }))
    .use(workspaceRoutes({ agents: deps.agents, workspaces: deps.workspaces, ...guardServices }))
    .use(
      mcpPlugin({
        ...guardServices,
        codeIndex: deps.codeIndex,
        docs: deps.docsIndex,
        meter: deps.meter,
        publicBaseUrl: config.publicBaseUrl,
        allowedHosts: config.mcp.allowedHosts,
      }),
    )
    .use(
      mcpToolsPlugin({
        mcpServers: deps.mcpServers,
        ...guardServices,
        publicBaseUrl: config.publicBaseUrl,
        stateTtlSeconds: config.integrations.stateTtlSeconds,
      }),
    )
  routeIndex.load(app.routes)
  routeGuards.load(app.routes)
  built = app
  return app
}

export type App = ReturnType<typeof createApp>
