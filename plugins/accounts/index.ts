/**
 * Accounts' face: GET and DELETE /api/org (the caller's organisation, owners only) and DELETE /api/users/{userId}
 * (an owner deletes a member of their organisation; anyone deletes their own account), and the deletion service the
 * operator commands use too. What deletion removes, anonymises and keeps is in docs/accounts.mdx. Also the caller's
 * password (change, reset, the reset page) and personal API keys (docs/authentication.mdx).
 */
import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { AccountStore } from '../../src/auth/account-store.ts'
import type { PasswordResets } from '../../src/auth/password-reset.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl, authenticateRequest, openApiExtension } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { guard } from '../../src/guards.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import type { ApiKeyService } from './api-keys.ts'
import type { AccountDeletion, DeletionRequest } from './deletion.ts'
import { keyRoutes } from './key-routes.ts'
import { passwordRoutes } from './password-routes.ts'
import { deletionReport, organizationDeletionBody, organizationView, userParams } from './schemas.ts'

export { createApiKeyService, type ApiKeyService } from './api-keys.ts'
export { createAccountDeletion, type AccountDeletion, type AccountDeletionOptions, type DeletionReport } from './deletion.ts'
export { DELETED_USER, PERSONAL_TABLES } from './tables.ts'

export interface AccountsPluginOptions {
  deletion: AccountDeletion
  accounts: AccountStore
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  apiKeys: ApiKeyService
  resets: PasswordResets
}

const byCaller = (request: Request, userId: string): DeletionRequest => {
  const meta = requestMeta(request)
  return { actor: `user:${userId}`, requestId: meta.id, clientIp: meta.clientIp }
}

/**
 * `{ owner: true }`: the caller's role must be owner. A guard like `auth`'s, so a caller of another role is refused
 * (403 forbidden) before anything about the body is read or said; after `auth`, which answers 401 first.
 */
function ownerOnly(access: AccessService) {
  return new Elysia({ name: 'owner-only' }).macro({
    owner: (required: boolean) => {
      const check = guard(async ({ request }: { request: Request }) => {
        const principal = await authenticateRequest(access, request)
        if (required && principal.role !== 'owner')
          throw new AppError('forbidden', `Only an owner of the organisation may do this; a ${principal.role} may not`)
      })
      return {
        detail: openApiExtension({ 'x-required-role': 'owner' }),
        transform: check.early,
        beforeHandle: check,
      }
    },
  })
}

export function accountsPlugin(options: AccountsPluginOptions) {
  const { deletion, accounts, access } = options
  return new Elysia({ name: 'accounts', detail: { tags: ['accounts'] } })
    .use(accessControl(options))
    .use(ownerOnly(access))
    .use(rateLimiting(options.rateLimits))
    .use(passwordRoutes(options))
    .use(keyRoutes(options))
    .get(
      '/api/org',
      async ({ principal }) => {
        const org = await accounts.organization(principal.orgId)
        if (!org) throw new AppError('not_found', 'No such organisation')
        const members = await accounts.users(org.id)
        return { id: org.id, name: org.name, plan: org.plan, members: members.map((m) => ({ id: m.id, email: m.email, role: m.role })) }
      },
      {
        auth: 'any',
        owner: true,
        rateLimit: 'default',
        response: { 200: organizationView, 401: problem, 403: problem, 404: problem, 429: problem },
        detail: { summary: "The caller's organisation and its members (owners only)" },
      },
    )
    .delete(
      '/api/org',
      async ({ body, principal, request }) => {
        const org = await accounts.organization(principal.orgId)
        if (!org) throw new AppError('not_found', 'No such organisation')
        if (body.confirm !== org.name)
          throw new AppError('validation_failed', "confirm: must be the organisation's name, exactly", {
            errors: [{ field: 'confirm', message: "must be the organisation's name, exactly" }],
          })
        return deletion.deleteOrganisation(org.id, byCaller(request, principal.userId))
      },
      {
        auth: 'any',
        owner: true,
        rateLimit: 'default',
        body: organizationDeletionBody,
        response: { 200: deletionReport, 401: problem, 403: problem, 404: problem, 409: problem, 422: problem, 429: problem },
        detail: {
          summary: "Delete the caller's organisation and everything of it (owners only)",
          description:
            "Deletes every member's account, chats and stored streams, integration tokens (revoked at the provider where it offers revocation), " +
            "agent workspaces, the organisation's imports, their workspaces and its code index, its billing rows and usage, then the organisation; " +
            'every member is signed out at once. The audit log keeps its entries and gains one recording the deletion. ' +
            '`confirm` must be the organisation name (422 otherwise). 409 subscription_active while a subscription would renew: cancel it in the billing portal first.',
        },
      },
    )
    .delete(
      '/api/users/:userId',
      async ({ params, principal, request }) => {
        const self = params.userId === principal.userId
        if (!self) {
          // Someone else's account: 404 unless they are of the caller's organisation, then 403 unless the caller owns it.
          await deletion.findUser(params.userId, principal.orgId)
          if (principal.role !== 'owner') throw new AppError('forbidden', 'Only an owner may delete another member of the organisation')
        }
        return deletion.deleteUser(params.userId, byCaller(request, principal.userId), { orgId: principal.orgId })
      },
      {
        auth: 'any',
        rateLimit: 'default',
        params: userParams,
        response: { 200: deletionReport, 401: problem, 403: problem, 404: problem, 409: problem, 429: problem },
        detail: {
          summary: 'Delete a user: yourself, or (owners) a member of your organisation',
          description:
            'Signs the user out everywhere, deletes their chats and stored streams, integration tokens (revoked at the provider where it offers revocation), ' +
            'agent tasks and workspaces, sessions and the user; their usage and the imports they started stay with the organisation, anonymised. ' +
            "A user of another organisation is 404. 409 last_owner for the organisation's last owner: make another owner first, or delete the organisation.",
        },
      },
    )
}
