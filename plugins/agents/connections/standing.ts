/**
 * Whether an open agent connection's user still has the right to it: the token it was opened with has not
 * expired and its sign-in was not ended (checked in this process's copy of the signed-out sessions, which other
 * processes' logouts reach within milliseconds through Redis or PostgreSQL), and the user still exists with a role
 * that grants agents:run (read from the database, so a role changed by any process or the admin command counts).
 */
import type { AccessService } from '../../../src/auth/access-service.ts'
import { grantedScopes } from '../../../src/auth/roles.ts'
import { CLOSE_NOT_ALLOWED, CLOSE_SIGNED_OUT, type ConnectionStanding, type Revocation } from './connections.ts'

export function connectionStanding(access: Pick<AccessService, 'sessionEnded' | 'rolesOf'>): ConnectionStanding {
  return {
    ended(grant, now) {
      if (grant.expiresAt !== undefined && grant.expiresAt <= now) return { code: CLOSE_SIGNED_OUT, reason: 'token expired: connect again with a fresh token' }
      if (grant.sessionId !== undefined && access.sessionEnded(grant.sessionId))
        return { code: CLOSE_SIGNED_OUT, reason: 'signed out: the session this connection was opened with has ended' }
      return undefined
    },
    async lost(userIds) {
      const roles = await access.rolesOf(userIds)
      const lost = new Map<string, Revocation>()
      for (const userId of userIds) {
        const role = roles.get(userId)
        if (role === undefined) lost.set(userId, { code: CLOSE_SIGNED_OUT, reason: 'the user was removed' })
        else if (!grantedScopes(role).includes('agents:run'))
          lost.set(userId, { code: CLOSE_NOT_ALLOWED, reason: `the ${role} role does not allow agents:run` })
      }
      return lost
    },
  }
}
