import { AccountStore } from '../auth/account-store.ts'
import { createAccessService, type AccessService, type ExternalVerifier } from '../auth/access-service.ts'
import { createAccessTokens } from '../auth/access-tokens.ts'
import { ApiKeyStore } from '../auth/api-keys.ts'
import { createPasswordResets, type PasswordResets } from '../auth/password-reset.ts'
import { createExternalTokenVerifier } from '../auth/external-tokens.ts'
import { revokedSessionsInDatabase, revokedSessionsInRedis } from '../auth/revoked-sessions.ts'
import { createPlanDirectory, type PlanDirectory } from '../auth/plans.ts'
import type { Config } from './config.ts'
import { createHttpClient } from '../http.ts'
import { createLogger, type Logger } from '../log.ts'
import { createRedisManager, type RedisManager } from '../redis.ts'
import { createCancelChannel, type CancelChannel } from '../event-log/cancel.ts'
import type { RateLimiter, RatePolicy } from '../rate-limit/index.ts'
import { createMemoryRateLimiter } from '../rate-limit/memory.ts'
import { createRedisRateLimiter } from '../rate-limit/redis.ts'
import { openDatabase, type Database } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { migrations } from '../storage/migrations/index.ts'
import { createUsageMeter, type UsageMeter } from '../usage/meter.ts'
import {
  createMemorySearchCache,
  createRedisSearchCache,
  createSearchProvider,
  createWebSearchService,
  type WebSearchService,
} from '../../plugins/web-search/index.ts'
import { createPaymentsService, type PaymentsService } from '../../plugins/payments/index.ts'
import { createIntegrationsService, providersFromConfig, type IntegrationsService } from '../../plugins/integrations/index.ts'
import { createPublisher, type Publisher } from '../../plugins/publish/index.ts'
import { createSecretBox } from '../secret-box.ts'
import { createModels, type Models } from '../llm/models.ts'
import { preloadOpenAiSdk, type ModelProvider } from '../llm/provider.ts'
import { buildModelCatalogue } from '../llm/model-providers.ts'
import { orgModelDefaults } from '../../plugins/models/index.ts'
import { createChatService, type ChatService } from '../../plugins/chat/index.ts'
import { createMemoryStreamLog, createRedisStreamLog } from '../../plugins/chat/index.ts'
import type { Sandbox } from '../sandbox/index.ts'
import { codeIndexFromConfig, type CodeIndex } from '../../plugins/code-search/index.ts'
import { bundledSite, createDocsIndex, type DocsIndex } from '../../plugins/docs/index.ts'
import { createImportService, type ImportService } from '../../plugins/imports/index.ts'
import {
  connectionStanding,
  createAgentRunner,
  createAgentService,
  createCommands,
  createConnectionHub,
  type AgentService,
  type ConnectionHub,
} from '../../plugins/agents/index.ts'
import { createMemoryTaskLog, createRedisTaskLog, createWorkspaces, type Workspaces } from '../../plugins/agents/index.ts'
import { join } from 'node:path'
import { classPolicies, policiesFromConfig, type RateLimitingOptions } from '../rate-limit/plugin.ts'
import type { ServiceMetrics } from '../observability/metrics.ts'
import { combineModelCallObservers } from '../observability/observers.ts'
import type { Tracing } from '../observability/tracing.ts'
import { pingRedis, reach } from '../reachability.ts'
import { openSseStreams } from '../sse.ts'
import { observedProvider } from '../llm/observed-provider.ts'
import { createLifecycle, type Lifecycle } from '../lifecycle.ts'
import pkg from '../../package.json' with { type: 'json' }
import { createSetupService, type SetupService } from '../../plugins/setup/index.ts'
import { createMcpToolsService, type McpToolsService } from '../../plugins/mcp-tools/index.ts'
import { createFilesService, type FilesService } from '../../plugins/files/index.ts'
import { createAccountDeletion, createApiKeyService, type AccountDeletion, type ApiKeyService } from '../../plugins/accounts/index.ts'

/** Everything the plugins are built from. Tests build their own with fakes. */
export interface Dependencies {
  readonly config: Config
  readonly logger: Logger
  readonly db: Database
  readonly lifecycle: Lifecycle
  readonly accounts: AccountStore
  readonly access: AccessService
  readonly plans: PlanDirectory
  readonly limiter: RateLimiter
  /** What every guarded route spends: the limiter, the configured policies per route class, fail-open or closed. */
  readonly rateLimits: RateLimitingOptions
  readonly meter: UsageMeter
  /** Also handed to chat for its web_search tool, `!search` and search augmentation. */
  readonly webSearch: WebSearchService
  /** Checkout, webhook events, the billing portal, plan expiry and the audit log. */
  readonly payments: PaymentsService
  /** OAuth connections; repository import and pages publishing get tokens through `tokenFor`. */
  readonly integrations: IntegrationsService
  /** Publishes generated sites to GitHub Pages with the user's GitHub connection. */
  readonly publisher: Publisher
  /** The model provider and default model handed to chat, enhanced chat, the agents and the documentation assistant. */
  readonly models: Models
  /** Conversations, their generations and resumable streams; enhanced chat starts its turns through it. */
  readonly chat: ChatService
  /** The documentation's search index, shared by the documentation assistant and the MCP server. */
  readonly docsIndex: DocsIndex
  /** Where enhanced chat and the agents run code; created on first use (it probes the machine once). */
  readonly sandbox: Pick<Sandbox, 'run' | 'checkSyntax' | 'runCommand' | 'available' | 'limits'>
  /** Development tasks' workspaces: files and diff readable through GET /api/agents/tasks/:taskId/... */
  readonly workspaces: Workspaces
  /** Imported repositories' code, one index per organisation: POST /api/search, chat's code_search and the agents. */
  readonly codeIndex: CodeIndex
  /** Repository imports: clone or fetch, analysis, and the files they hand the code index. */
  readonly imports: ImportService
  /** Agent tasks: they run here whatever happens to the connection that started them. */
  readonly agents: AgentService
  /** The open agent WebSocket connections of this process. */
  readonly agentConnections: ConnectionHub
  /** First run: the one-time setup code and the creation of the first owner at /setup. */
  readonly setup: SetupService
  /** Deleting a user or an organisation everywhere their data lives: DELETE /api/org, DELETE /api/users/:id, the admin commands. */
  readonly deletion: AccountDeletion
  /** The organisation's remote MCP servers: /api/mcp-servers, and the tools chat and develop tasks offer from them. */
  readonly mcpServers: McpToolsService
  /** Uploaded files: /api/files, and the files chat messages name by id. */
  readonly files: FilesService
  /** Personal API keys as their owners manage them: POST, GET /api/keys, DELETE /api/keys/:keyId. */
  readonly apiKeys: ApiKeyService
  /** Password reset links: admin users reset-password, POST /auth/password/reset and /auth/password/forgot. */
  readonly passwordResets: PasswordResets
  /** Readiness checks beyond the database, by name; each rejects when unhealthy. */
  readonly readinessChecks: Record<string, () => Promise<unknown>>
  /** Prometheus metrics; undefined unless METRICS_TOKEN or METRICS_PORT is set. */
  readonly metrics: ServiceMetrics | undefined
  /** OpenTelemetry tracing; undefined unless OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  readonly tracing: Tracing | undefined
  /**
   * Loads what a configured part needs at its first request (the model provider's SDK), to run once the server
   * answers: neither start-up nor that first request waits for it. A failure is logged; the part loads on use.
   */
  warmUp(): Promise<void>
  close(): Promise<void>
}

export interface DependencyOverrides {
  logger?: Logger
  /** SQLite file to use instead of DATA_DIR/service.db (`:memory:` in tests). */
  sqliteFile?: string
  /** Replaces the identity provider's verifier (tests). */
  externalVerifier?: ExternalVerifier
  limiter?: RateLimiter
  /** Replaces the OpenAI-compatible model provider (tests, benchmarks). */
  modelProvider?: ModelProvider
}

export async function buildDependencies(config: Config, overrides: DependencyOverrides = {}): Promise<Dependencies> {
  const lifecycle = createLifecycle()
  const logger = overrides.logger ?? createLogger(config.log)
  const { databaseUrl, redisUrl } = config
  const openStorage = () => openDatabase({ databaseUrl, dataDir: config.dataDir, sqliteFile: overrides.sqliteFile })
  // PostgreSQL and Redis that do not answer stop start-up here, named, before anything else is built on them.
  const db = databaseUrl ? await reach('DATABASE_URL', databaseUrl, 'PostgreSQL', openStorage) : await openStorage()
  if (redisUrl) await reach('REDIS_URL', redisUrl, 'Redis', () => pingRedis(redisUrl))
  // The one Redis connection manager every Redis user of this process shares.
  const redis = redisUrl ? createRedisManager({ url: redisUrl, reconnectMaxDelayMs: config.redisReconnectMaxDelayMs, logger }) : undefined
  const cancels = createCancelChannel({ redis, logger })
  // Loaded only when configured: without METRICS_TOKEN or METRICS_PORT prom-client is not even imported.
  const metrics =
    config.metrics.token !== undefined || config.metrics.port !== undefined ? (await import('../observability/metrics.ts')).createServiceMetrics() : undefined
  // Likewise: without an endpoint no OpenTelemetry code is imported.
  const tracing = config.tracing
    ? (await import('../observability/tracing.ts')).createTracing({ ...config.tracing, serviceVersion: pkg.version, logger })
    : undefined
  const modelCalls = combineModelCallObservers([metrics?.modelCalls, tracing?.modelCalls])
  const observed = (provider: ModelProvider | undefined) => (provider && modelCalls ? observedProvider(provider, modelCalls) : provider)
  await migrate(db, migrations, logger)

  const accounts = new AccountStore(db)
  const tokens = createAccessTokens({
    secret: config.secrets.jwtSecret,
    issuer: config.tokens.issuer,
    audience: config.tokens.audience,
    ttlSeconds: config.tokens.accessTtlSeconds,
  })
  const oidc = config.oidc
  // Loaded before the first request, so a token signed out before this process started is refused here too.
  const revoked = redis ? revokedSessionsInRedis(redis, { logger }) : revokedSessionsInDatabase(db, { logger })
  await revoked.start()
  const access = createAccessService({
    accounts,
    tokens,
    logger,
    issuer: config.tokens.issuer,
    refreshTtlSeconds: config.tokens.refreshTtlSeconds,
    defaultPlan: config.plans.ids[0]!,
    login: config.login,
    revoked,
    apiKeys: new ApiKeyStore(db),
    external: oidc && {
      ...oidc,
      verifier: overrides.externalVerifier ?? createExternalTokenVerifier({ issuer: oidc.issuer, audience: oidc.audience }),
    },
  })
  await access.ensureFirstOwner(config.admin)
  const setup = createSetupService({ db, access, accounts, logger, codeTtlSeconds: config.setup.codeTtlSeconds })

  const baseLimiter =
    overrides.limiter ?? (redis ? createRedisRateLimiter({ redis, keyPrefix: 'rl:', onStoreError: 'open', logger }) : createMemoryRateLimiter())
  const limiter = metrics ? metrics.countRefusals(baseLimiter) : baseLimiter
  const rateLimitPolicies = { policies: policiesFromConfig(config.rateLimits), failClosed: config.rateLimits.failClosed }
  // Agent commands and the chat's run_agent tool spend what POST /api/chat spends, failing closed or open as its class is configured.
  const chatPolicies = classPolicies(rateLimitPolicies, 'chat').all
  const meter = createUsageMeter({ db, logger })
  const searchProvider = config.webSearch.provider
  const webSearch = createWebSearchService({
    provider: searchProvider && createSearchProvider(searchProvider, createHttpClient()),
    cache: redis ? createRedisSearchCache({ redis, logger }) : createMemorySearchCache(),
    meter,
    ttlSeconds: config.webSearch.cacheTtlSeconds,
  })
  const integrations = createIntegrationsService({
    db,
    logger,
    box: await createSecretBox({ key: config.secrets.tokenEncryptionKey, previousKeys: config.secrets.previousTokenEncryptionKeys }),
    http: createHttpClient({ timeoutMs: 10_000 }),
    providers: providersFromConfig(config.integrations),
    publicBaseUrl: config.publicBaseUrl,
    returnUrl: config.integrations.returnUrl,
    stateTtlSeconds: config.integrations.stateTtlSeconds,
    statusCacheTtlSeconds: config.integrations.statusCacheTtlSeconds,
  })
  const chatConfig = config.chat
  // Every configured provider behind one that routes each call by its model id (GET /api/models lists them).
  const catalogue = buildModelCatalogue(chatConfig, createHttpClient({ timeoutMs: chatConfig.upstreamTimeoutMs }), overrides.modelProvider)
  const modelProvider = observed(catalogue?.provider)
  const codeIndex = codeIndexFromConfig(config, { db, logger, modelProvider, meter, redis, secret: config.secrets.jwtSecret })
  const models = createModels(modelProvider, catalogue?.defaultModel ?? chatConfig.model, { catalogue: catalogue?.models, orgDefaults: orgModelDefaults(db) })
  const warmUps: { part: string; load: () => Promise<void> }[] = []
  if (chatConfig.provider && !overrides.modelProvider) warmUps.push({ part: 'model provider', load: preloadOpenAiSdk })
  const sandbox = sandboxOnDemand(config, logger)
  const plans = createPlanDirectory(accounts, { enterprise: config.plans.enterprise, fallbackPlan: config.plans.ids[0] })
  const rateLimits: RateLimitingOptions = { limiter, access, plans, ...rateLimitPolicies }
  const payments = createPaymentsService({ db, accounts, plans, logger, settings: config.payments, planIds: config.plans.ids })
  // Applies payment events a crash left stored but unapplied, and plans that lapsed while down.
  await payments.start()
  const mcpServers = createMcpToolsService({
    db,
    box: await createSecretBox({ key: config.secrets.tokenEncryptionKey, previousKeys: config.secrets.previousTokenEncryptionKeys }),
    http: createHttpClient({ timeoutMs: config.mcpTools.callTimeoutMs }),
    audit: payments,
    logger,
    settings: config.mcpTools,
    publicBaseUrl: config.publicBaseUrl,
    stateTtlMs: config.integrations.stateTtlSeconds * 1000,
  })
  const imports = createImportService({
    db,
    admission: lifecycle,
    codeIndex,
    dataDir: config.dataDir,
    settings: config.imports,
    heartbeatMs: config.imports.heartbeatMs,
    tokens: integrations,
    logger,
    meter,
    onImportEnd: metrics && ((status) => metrics.importEnded(status)),
  })
  const publisher = createPublisher({
    integrations,
    imports,
    meter,
    logger,
    http: createHttpClient({ timeoutMs: 10_000 }),
    apiUrl: config.integrations.github.apiUrl,
    gitUrl: config.publish.gitUrl,
    limits: { maxFiles: config.publish.maxFiles, maxBytes: config.publish.maxSiteBytes },
    gitTimeoutMs: config.publish.gitTimeoutMs,
  })

  const agentRateLimit = { limiter, policies: chatPolicies }
  const { workspaces, agents, agentConnections, stopSweeping } = await createAgents(config, {
    logger,
    redis,
    cancels,
    metrics,
    models,
    meter,
    imports,
    codeIndex,
    sandbox: sandbox.facade,
    publisher,
    access,
    lifecycle,
    rateLimit: agentRateLimit,
    extraTools: mcpServers.tools,
  })
  const files = createFilesService({ db, logger, settings: config.files })
  // Built on the agents: its run_agent tool starts tasks and follows them.
  const chat = createChatService({
    db,
    logger,
    admission: lifecycle,
    provider: modelProvider,
    webSearch,
    codeIndex,
    agents: createAgentRunner({ agents, rateLimit: agentRateLimit }),
    extraTools: mcpServers.tools,
    attachments: files,
    meter,
    settings: chatConfig,
    maxGenerationMs: chatConfig.generationTimeoutSeconds * 1000,
    cancels,
    log: redis
      ? createRedisStreamLog({
          redis,
          ttlSeconds: chatConfig.streamTtlSeconds,
          maxGenerationSeconds: chatConfig.generationTimeoutSeconds,
          logger,
        })
      : createMemoryStreamLog({ ttlSeconds: chatConfig.streamTtlSeconds }),
  })

  // A deleted chat takes with it the files attached to it that no other chat holds.
  chat.onChatDeleted((deleted) => files.deleteForChat(deleted.id))

  const apiKeys = createApiKeyService({ keys: new ApiKeyStore(db), access, audit: payments, logger })
  const resetWebhook = config.passwordReset.webhookUrl
  const resetHttp = createHttpClient({ timeoutMs: 10_000 })
  const passwordResets = createPasswordResets({
    accounts,
    access,
    logger,
    secret: config.secrets.jwtSecret,
    publicBaseUrl: config.publicBaseUrl,
    ttlSeconds: config.passwordReset.ttlSeconds,
    deliver:
      resetWebhook === undefined
        ? undefined
        : async (message) => {
            const response = await resetHttp.request(resetWebhook, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(message),
              upstream: 'password reset webhook',
            })
            await response.body?.cancel()
            if (!response.ok) throw new Error(`the password reset webhook answered ${response.status}`)
          },
  })

  const deletion = createAccountDeletion({
    db,
    accounts,
    access,
    chat,
    integrations,
    imports,
    codeIndex,
    payments,
    agents,
    workspaces,
    mcpServers,
    files,
    meter,
    logger,
    maxTasks: config.agents.maxTasksKeptPerUser,
  })

  // Closed in this order, each before what it still uses.
  const closers: (() => Promise<void>)[] = [
    // Before imports and chat, which its running tasks use; the workspaces after the tasks.
    () => agents.close(),
    () => {
      stopSweeping()
      return workspaces.close()
    },
    // Before the code index: running imports stop and are recorded as interrupted.
    () => imports.close(),
    // Before the database: it saves pending snapshots and records their versions.
    () => codeIndex.close(),
    () => payments.close(),
    // Its generations store their answers through the database and meter.
    () => chat.close(),
    () => sandbox.close(),
    () => webSearch.close(),
    () => limiter.close(),
    () => meter.close(),
    () => revoked.close(),
    () => cancels.close(),
    async () => redis?.close(),
    () => db.close(),
  ]
  // Closed last, so the spans of everything closed before it are sent.
  if (tracing) closers.push(() => tracing.shutdown())
  metrics?.watch({
    sseStreams: openSseStreams,
    webSockets: () => agentConnections.size,
    agentTasks: () => agents.runningCount,
    imports: () => imports.runningCount,
  })
  const readinessChecks: Record<string, () => Promise<unknown>> = {}
  // Chat, agents and resumes need Redis: while it is unreachable the load balancer should send work elsewhere.
  if (redis) readinessChecks.redis = () => redis.ping()
  return {
    config,
    logger,
    db,
    lifecycle,
    accounts,
    access,
    plans,
    rateLimits,
    payments,
    limiter,
    meter,
    webSearch,
    models,
    chat,
    docsIndex: createDocsIndex(bundledSite().pages, config.publicBaseUrl),
    sandbox: sandbox.facade,
    workspaces,
    integrations,
    publisher,
    codeIndex,
    imports,
    agents,
    agentConnections,
    setup,
    deletion,
    mcpServers,
    files,
    apiKeys,
    passwordResets,
    readinessChecks,
    metrics,
    tracing,
    async warmUp() {
      for (const { part, load } of warmUps) await load().catch((err: unknown) => logger.warn('warm-up failed; loading on first use instead', { part, err }))
    },
    async close() {
      for (const close of closers) await close().catch((err) => logger.warn('close failed', { err }))
    },
  }
}

/**
 * The sandbox, created on first use: it checks its isolation with a real launch, which only code runs should pay for,
 * and its modules load then rather than at start-up.
 */
function sandboxOnDemand(config: Config, logger: Logger) {
  let sandbox: Sandbox | undefined
  const created = () => {
    if (sandbox) return sandbox
    const { createSandbox } = require('../sandbox/index.ts') as typeof import('../sandbox/index.ts')
    sandbox = createSandbox({ bunPath: process.execPath, defaults: config.sandbox, hiddenPaths: [config.dataDir], logger })
    return sandbox
  }
  const facade: Dependencies['sandbox'] = {
    run: (request) => created().run(request),
    checkSyntax: (language, code) => created().checkSyntax(language, code),
    runCommand: (request) => created().runCommand(request),
    get available() {
      return created().available
    },
    get limits() {
      return created().limits
    },
  }
  return { facade, close: async () => sandbox?.close() }
}

/** What the agents are built on: the parts of the service their commands and connections use. */
interface AgentParts {
  logger: Logger
  redis: RedisManager | undefined
  cancels: CancelChannel
  metrics: ServiceMetrics | undefined
  models: Models
  meter: UsageMeter
  imports: ImportService
  codeIndex: CodeIndex
  sandbox: Dependencies['sandbox']
  publisher: Publisher
  access: AccessService
  lifecycle: Lifecycle
  /** The MCP servers' tools `develop` offers. */
  extraTools: McpToolsService['tools']
  /** What a command spends: the chat class's policies. */
  rateLimit: { limiter: RateLimiter; policies: readonly Readonly<RatePolicy>[] }
}

/** The task workspaces (swept of what stopped processes left), the agent service with its commands, and the connection hub. */
async function createAgents(config: Config, parts: AgentParts) {
  const { logger, redis, metrics, meter } = parts
  const agentSettings = config.agents
  const workspaces = createWorkspaces({
    root: join(config.dataDir, 'agent-workspaces'),
    limits: agentSettings.workspace,
    retentionSeconds: agentSettings.taskRetentionSeconds,
    logger,
  })
  // Left by a process that stopped: past a task's longest run and the retention time, nothing reads them. Then
  // every minute, for workspaces another process released and did not live to remove.
  const sweepWorkspaces = () => workspaces.sweepOrphans(agentSettings.taskTimeoutSeconds + agentSettings.taskRetentionSeconds)
  await sweepWorkspaces()
  const workspaceSweeper = setInterval(() => void sweepWorkspaces().catch((err) => logger.warn('agent workspace sweep failed', { err })), 60_000)
  workspaceSweeper.unref()
  const agents = createAgentService({
    log: redis
      ? createRedisTaskLog({
          redis,
          retentionSeconds: agentSettings.taskRetentionSeconds,
          maxTaskSeconds: agentSettings.taskTimeoutSeconds,
          keptPerUser: agentSettings.maxTasksKeptPerUser,
          logger,
        })
      : createMemoryTaskLog({ retentionSeconds: agentSettings.taskRetentionSeconds, keptPerUser: agentSettings.maxTasksKeptPerUser }),
    commands: createCommands({
      models: parts.models,
      meter,
      imports: parts.imports,
      codeIndex: parts.codeIndex,
      debugLimits: {
        maxSteps: config.enhancedChat.maxSteps,
        timeLimitMs: config.enhancedChat.timeLimitSeconds * 1000,
        maxAttempts: config.enhancedChat.maxAttempts,
      },
      workspaces,
      sandbox: parts.sandbox,
      developLimits: agentSettings.develop,
      publisher: parts.publisher,
      extraTools: parts.extraTools,
    }),
    logger,
    meter,
    taskTimeoutSeconds: agentSettings.taskTimeoutSeconds,
    maxRunningTasksPerUser: agentSettings.maxRunningTasksPerUser,
    onTaskEnd: metrics && ((command, status) => metrics.agentTaskEnded(command, status)),
    cancels: parts.cancels,
  })
  const agentConnections = createConnectionHub({
    agents,
    settings: agentSettings,
    logger,
    rateLimit: parts.rateLimit,
    standing: connectionStanding(parts.access),
    admission: parts.lifecycle,
  })
  return { workspaces, agents, agentConnections, stopSweeping: () => clearInterval(workspaceSweeper) }
}
