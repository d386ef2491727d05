/**
 * Deleting a user or an organisation, everywhere their data lives. Each part of the service removes its own state
 * through the service the composition root hands in (chats and their stored streams, integration tokens, imports and
 * their workspaces, the code index, billing rows); what is left is rows of the account tables, deleted or anonymised
 * here as tables.ts lists. The user is signed out everywhere first, so nothing new is written while the rest goes,
 * and the deletion is appended to the audit log last, with what it removed. docs/accounts.mdx is the contract.
 */
import type { AccessService } from '../../src/auth/access-service.ts'
import type { AccountStore, User } from '../../src/auth/account-store.ts'
import type { Caller } from '../../src/auth/caller.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { AgentService, Workspaces } from '../agents/index.ts'
import type { ChatService } from '../chat/index.ts'
import type { CodeIndex } from '../code-search/index.ts'
import type { FilesService } from '../files/index.ts'
import type { ImportService } from '../imports/index.ts'
import type { IntegrationsService } from '../integrations/index.ts'
import type { McpToolsService } from '../mcp-tools/index.ts'
import type { PaymentsService } from '../payments/index.ts'
import { DELETED_USER } from './tables.ts'

export interface AccountDeletionOptions {
  db: Database
  accounts: AccountStore
  access: Pick<AccessService, 'endSessionsOf' | 'endApiKeysOf'>
  chat: Pick<ChatService, 'deleteChatsOf'>
  integrations: Pick<IntegrationsService, 'disconnectAll'>
  imports: Pick<ImportService, 'deleteOrganisation'>
  codeIndex: Pick<CodeIndex, 'removeOrganisation'>
  payments: Pick<PaymentsService, 'renewingSubscription' | 'recordAudit' | 'deleteOrganisationBilling'>
  agents: Pick<AgentService, 'recent' | 'cancel' | 'settled'>
  workspaces: Pick<Workspaces, 'remove'>
  /** The organisation's MCP servers and each user's tokens for them. */
  mcpServers?: Pick<McpToolsService, 'deleteUser' | 'deleteOrganisation'>
  /** Uploaded files: a user's uploads, or all of the organisation's. */
  files?: Pick<FilesService, 'deleteUser' | 'deleteOrganisation'>
  meter: Pick<UsageMeter, 'flush'>
  logger: Logger
  /** Agent tasks looked at per user (their task log keeps at most AGENT_MAX_TASKS_KEPT_PER_USER). Default 1000. */
  maxTasks?: number
}

/** Who asked: an owner or the user themselves through the API (`user:<id>`), or an operator's command (`system`). */
export interface DeletionRequest {
  actor: `user:${string}` | 'system'
  requestId?: string | null
  clientIp?: string | null
}

/** What a deletion removed, by kind: what the API answers and the operator command prints. */
export type Removed = Record<string, number>

export interface DeletionReport {
  /** `user` or `organization`. */
  deleted: 'user' | 'organization'
  id: string
  removed: Removed
  /** The audit log entry recording the deletion. */
  auditSeq: number
}

const add = (removed: Removed, counts: Record<string, number>) => {
  for (const [kind, n] of Object.entries(counts)) removed[kind] = (removed[kind] ?? 0) + n
}

export function createAccountDeletion(options: AccountDeletionOptions) {
  const { db, accounts, logger } = options

  /** Everything of one user but their row and the audit entry: sessions, agent tasks, chats, integrations. */
  async function removeUserData(user: User, removed: Removed): Promise<void> {
    // First: their tokens are refused and their agent connections close, so nothing new arrives meanwhile.
    add(removed, { sessions: await options.access.endSessionsOf(user.id) })
    // Their API keys too, in every process at once: the rows go with the user's below.
    await options.access.endApiKeysOf(user.id)
    const caller: Caller = { userId: user.id, orgId: user.orgId }
    const tasks = await options.agents.recent(caller, options.maxTasks ?? 1000)
    for (const task of tasks) {
      // A finished task answers false; one that ended meanwhile, an error: either way it runs no more.
      await options.agents.cancel(caller, task.taskId).catch(() => false)
      await options.agents.settled(task.taskId)
      await options.workspaces.remove(task.taskId)
    }
    add(removed, { agentTasks: tasks.length })
    const chats = await options.chat.deleteChatsOf(user.id)
    add(removed, { chats: chats.chats, chatMessages: chats.messages })
    const integrations = await options.integrations.disconnectAll(user.id)
    add(removed, { integrationConnections: integrations.connections, integrationRevocations: integrations.revoked, oauthFlows: integrations.flows })
    if (options.mcpServers) add(removed, await options.mcpServers.deleteUser(user.id))
    if (options.files) add(removed, await options.files.deleteUser(user.id))
  }

  /** The user's rows in the account tables; usage and imports they started stay with the organisation, anonymised. */
  async function removeUserRows(user: User, removed: Removed): Promise<void> {
    // Usage still buffered in this process is written first, so it is anonymised with the rest.
    await options.meter.flush()
    const counts = await db.sql.begin(async (tx) => {
      const usage = await tx`UPDATE usage_events SET user_id = ${DELETED_USER} WHERE user_id = ${user.id} RETURNING id`
      const imports = await tx`UPDATE codehost_imports SET user_id = ${DELETED_USER} WHERE user_id = ${user.id} RETURNING id`
      await tx`UPDATE setup_completion SET user_id = ${DELETED_USER} WHERE user_id = ${user.id}`
      const tokens = await tx`DELETE FROM refresh_tokens WHERE user_id = ${user.id} RETURNING id`
      const keys = await tx`DELETE FROM api_keys WHERE user_id = ${user.id} RETURNING id`
      const failures = await tx`DELETE FROM login_failures WHERE subject = ${`email:${user.email}`} RETURNING subject`
      const users = await tx`DELETE FROM users WHERE id = ${user.id} RETURNING id`
      return {
        users: users.length,
        refreshTokens: tokens.length,
        apiKeys: keys.length,
        loginFailures: failures.length,
        usageEventsAnonymised: usage.length,
        importsAnonymised: imports.length,
      }
    })
    add(removed, counts)
  }

  /** The user, or 404 (also for a user of another organisation when `orgId` is given: nothing is learnt of them). */
  async function findUser(userId: string, orgId?: string): Promise<User> {
    const user = await accounts.userById(userId)
    if (!user || (orgId !== undefined && user.orgId !== orgId)) throw new AppError('not_found', 'No such user in this organisation')
    return user
  }

  /**
   * Refuses to delete the last owner of an organisation: it would be left with nobody who can manage or delete it.
   * Another owner is made first (admin users set-role), or the organisation is deleted as a whole.
   */
  async function assertNotLastOwner(user: User): Promise<void> {
    if (user.role !== 'owner') return
    const members = await accounts.users(user.orgId)
    if (members.some((m) => m.id !== user.id && m.role === 'owner')) return
    throw new AppError(
      'last_owner',
      members.length > 1
        ? 'This is the last owner of the organisation: make another member owner first, or delete the organisation (DELETE /api/org)'
        : 'This is the only member of the organisation: delete the organisation instead (DELETE /api/org)',
      { extensions: { organizationId: user.orgId } },
    )
  }

  return {
    findUser,

    /**
     * Deletes a user and everything of theirs; rows their organisation keeps (usage, imports they started) are
     * anonymised. `orgId` limits it to a user of that organisation (an owner's request).
     */
    async deleteUser(userId: string, request: DeletionRequest, scope: { orgId?: string } = {}): Promise<DeletionReport> {
      const user = await findUser(userId, scope.orgId)
      await assertNotLastOwner(user)
      const removed: Removed = {}
      await removeUserData(user, removed)
      await removeUserRows(user, removed)
      const entry = await options.payments.recordAudit({
        orgId: user.orgId,
        actor: request.actor,
        action: 'user.deleted',
        requestId: request.requestId,
        clientIp: request.clientIp,
        details: { userId: user.id, role: user.role, removed },
      })
      logger.info('user deleted', { userId: user.id, orgId: user.orgId, actor: request.actor })
      return { deleted: 'user', id: user.id, removed, auditSeq: entry.seq }
    },

    /**
     * Deletes an organisation: every member as deleteUser does, its imports and their workspaces, its code index,
     * its billing rows and usage, then the organisation. Refused (409 subscription_active) while a subscription
     * would charge it again: it is cancelled in the billing portal first, so no money moves for a deleted customer.
     */
    async deleteOrganisation(orgId: string, request: DeletionRequest): Promise<DeletionReport> {
      const org = await accounts.organization(orgId)
      if (!org) throw new AppError('not_found', 'No such organisation')
      const renewing = await options.payments.renewingSubscription(orgId)
      if (renewing)
        throw new AppError(
          'subscription_active',
          `The organisation's subscription ${renewing.id} is ${renewing.status} and renews: cancel it in the billing portal first (POST /api/payment/portal)`,
          { extensions: { subscriptionId: renewing.id } },
        )
      const removed: Removed = {}
      const members = await accounts.users(orgId)
      for (const member of members) await removeUserData(member, removed)
      add(removed, await options.imports.deleteOrganisation(orgId))
      if (options.mcpServers) add(removed, await options.mcpServers.deleteOrganisation(orgId))
      if (options.files) add(removed, await options.files.deleteOrganisation(orgId))
      await options.codeIndex.removeOrganisation?.(orgId)
      add(removed, await options.payments.deleteOrganisationBilling(orgId))
      for (const member of members) await removeUserRows(member, removed)
      const rows = await db.sql.begin(async (tx) => {
        // What the members' anonymisation kept belongs to the organisation, which goes now.
        const usage = await tx`DELETE FROM usage_events WHERE org_id = ${orgId} RETURNING id`
        const chats = await tx`DELETE FROM chats WHERE org_id = ${orgId} RETURNING id`
        const organizations = await tx`DELETE FROM organizations WHERE id = ${orgId} RETURNING id`
        return { usageEvents: usage.length, chats: chats.length, organizations: organizations.length }
      })
      add(removed, rows)
      const entry = await options.payments.recordAudit({
        orgId,
        actor: request.actor,
        action: 'organization.deleted',
        requestId: request.requestId,
        clientIp: request.clientIp,
        details: { organizationId: orgId, members: members.map((m) => m.id), removed },
      })
      logger.info('organisation deleted', { orgId, actor: request.actor, members: members.length })
      return { deleted: 'organization', id: orgId, removed, auditSeq: entry.seq }
    },
  }
}

export type AccountDeletion = ReturnType<typeof createAccountDeletion>
