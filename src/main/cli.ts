import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../storage/database.ts'
import { reach } from '../reachability.ts'
import { BackupError, restoreBackup, writeBackup } from './backup.ts'
import { externalOrgKey } from '../auth/access-service.ts'
import { ROLES, isRole } from '../auth/roles.ts'
import { loadConfig } from './config.ts'
import { loadStorageLocation } from '../config.ts'
import { buildDependencies, type Dependencies } from './dependencies.ts'
import { createLogger } from '../log.ts'
import type { DeletionReport } from '../../plugins/accounts/index.ts'
import { EXIT, VERSION_TEXT, configurationFailure, programName } from '../command-line.ts'

const USAGE = `Operator commands:
  orgs list
  orgs create --name NAME [--plan PLAN]
  orgs set-plan --org ORG_ID --plan PLAN
  orgs link --org ORG_ID --external VALUE   (external users whose OIDC_ORG_CLAIM is VALUE join it)
  orgs delete --org ORG_ID   (its members, their data, imports, code index, billing rows; see docs/accounts.mdx)
  users list [--org ORG_ID]
  users create --email EMAIL --password PASSWORD --role ROLE [--org ORG_ID | --org-name NAME]
  users set-role (--user USER_ID | --email EMAIL) --role ROLE
  users delete (--user USER_ID | --email EMAIL)   (signs them out and deletes their data)
  users reset-password (--user USER_ID | --email EMAIL)   (prints a one-time link that sets a new password)
  audit verify          (exit 1 when the audit log's hash chain is broken)
  backup FILE           (a consistent copy of DATA_DIR and the embedded database, safe while the service runs)
  restore FILE          (into an empty DATA_DIR; with DATABASE_URL, after pg_restore)
Roles: ${ROLES.join(', ')}`

// What --help adds after the command list.
const ADMIN_NOTES = `They use the storage the environment configures (DATA_DIR or DATABASE_URL), as the service does.
Exit codes: 0 done; 1 audit verify found a break, or a backup or restore was refused (nothing written); 2 command line not understood; 78 configuration invalid,
or PostgreSQL or Redis could not be reached.`

class UsageError extends Error {}

const COMMAND_OPTIONS = {
  name: { type: 'string' },
  plan: { type: 'string' },
  org: { type: 'string' },
  'org-name': { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  role: { type: 'string' },
  user: { type: 'string' },
  external: { type: 'string' },
} as const

/** The command and its options; a flag it does not know, or a flag without its value, is a usage error. */
function parseCommand(args: string[]) {
  try {
    return parseArgs({ args, allowPositionals: true, options: COMMAND_OPTIONS })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

function need(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`--${flag} is required`)
  return value
}

/** Runs one operator command against the configured storage; answers the exit code. */
export async function runCli(args: string[], deps: Dependencies, out: (line: string) => void): Promise<number> {
  let parsed: ReturnType<typeof parseCommand>
  try {
    parsed = parseCommand(args)
  } catch (err) {
    out(`error: ${(err as Error).message}\n\n${USAGE}`)
    return EXIT.usage
  }
  const { values, positionals } = parsed
  const { accounts, access, config } = deps
  const plan = (p: string | undefined) => {
    const chosen = p ?? config.plans.ids[0]!
    if (!config.plans.ids.includes(chosen)) throw new UsageError(`unknown plan "${chosen}"; plans are ${config.plans.ids.join(', ')}`)
    return chosen
  }
  const role = (r: string | undefined) => {
    if (!isRole(r)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`)
    return r
  }
  try {
    switch (positionals.join(' ')) {
      case 'orgs list':
        for (const o of await accounts.organizations()) out(`${o.id}\t${o.plan}\t${o.name}`)
        return 0
      case 'orgs create': {
        const org = await accounts.createOrganization(need(values.name, 'name'), plan(values.plan))
        out(org.id)
        return 0
      }
      case 'orgs set-plan': {
        if (!(await accounts.setPlan(need(values.org, 'org'), plan(need(values.plan, 'plan'))))) throw new UsageError(`no organisation ${values.org}`)
        out(`plan of ${values.org} is now ${values.plan}`)
        return 0
      }
      case 'orgs link': {
        const oidc = config.oidc
        if (!oidc?.orgClaim) throw new UsageError('orgs link needs OIDC_ISSUER and OIDC_ORG_CLAIM to be set')
        const value = need(values.external, 'external')
        if (!(await accounts.linkOrganization(need(values.org, 'org'), externalOrgKey(oidc.issuer, oidc.orgClaim, value))))
          throw new UsageError(`no organisation ${values.org}, or ${oidc.orgClaim} "${value}" is linked to another one`)
        out(`external users of ${oidc.issuer} whose ${oidc.orgClaim} is "${value}" join ${values.org}`)
        return 0
      }
      case 'users list':
        for (const u of await accounts.users(values.org)) out(`${u.id}\t${u.orgId}\t${u.role}\t${u.email}`)
        return 0
      case 'users create': {
        if (values.org && !(await accounts.organization(values.org))) throw new UsageError(`no organisation ${values.org}`)
        const user = await access.createAccount({
          email: need(values.email, 'email'),
          password: need(values.password, 'password'),
          role: role(values.role),
          orgId: values.org,
          orgName: values['org-name'],
        })
        out(user.id)
        return 0
      }
      case 'users set-role': {
        const user = values.user ? await accounts.userById(values.user) : await accounts.userByEmail(need(values.email, 'email').toLowerCase())
        if (!user) throw new UsageError('no such user')
        await accounts.setRole(user.id, role(values.role))
        out(`role of ${user.email} is now ${values.role}`)
        return 0
      }
      case 'users delete': {
        const user = values.user ? await accounts.userById(values.user) : await accounts.userByEmail(need(values.email, 'email').toLowerCase())
        if (!user) throw new UsageError('no such user')
        printRemoved(out, await deps.deletion.deleteUser(user.id, { actor: 'system' }))
        return 0
      }
      case 'users reset-password': {
        const user = values.user ? await accounts.userById(values.user) : await accounts.userByEmail(need(values.email, 'email').toLowerCase())
        if (!user) throw new UsageError('no such user')
        if (!user.passwordHash) throw new UsageError(`${user.email} signs in through the identity provider: there is no password here to reset`)
        const link = deps.passwordResets.linkFor(user)
        out(link.url)
        out(`works once, until ${new Date(link.expiresAt).toISOString()}, for ${user.email}; setting the password signs them out everywhere`)
        return 0
      }
      case 'orgs delete': {
        printRemoved(out, await deps.deletion.deleteOrganisation(need(values.org, 'org'), { actor: 'system' }))
        return 0
      }
      case 'audit verify': {
        const report = await deps.payments.verifyAudit()
        if (report.valid) out(`audit log intact: ${report.checked} entries`)
        else out(`audit log broken at entry ${report.firstBroken!.seq}: ${report.firstBroken!.reason} (${report.checked} entries hold before it)`)
        return report.valid ? 0 : 1
      }
      default:
        throw new UsageError(positionals.length ? `unknown command "${positionals.join(' ')}"` : 'no command given')
    }
  } catch (err) {
    const code = (err as { code?: string }).code
    if (err instanceof UsageError || code === 'conflict' || code === 'last_owner' || code === 'subscription_active' || code === 'not_found') {
      out(`error: ${(err as Error).message}\n\n${USAGE}`)
      return 2
    }
    throw err
  }
}

/** What a deletion removed, one kind a line, after the line naming what was deleted. */
function printRemoved(out: (line: string) => void, report: DeletionReport) {
  out(`deleted ${report.deleted} ${report.id} (audit entry ${report.auditSeq})`)
  for (const [kind, n] of Object.entries(report.removed)) out(`${kind}\t${n}`)
}

/** The operator command line: `--help` and `--version` answer at once, and a bad command line is refused before
 * any storage is opened. Exit codes as the server's: 0, 1 (audit verify found a break), 2 usage, 78 configuration. */
export async function main(args: string[]): Promise<number> {
  if (args.some((a) => a === '--help' || a === '-h') || args[0] === 'help') {
    console.log(
      `${VERSION_TEXT}\nUsage: ${programName()} admin COMMAND [options]   (from source: npm run admin -- COMMAND [options])\n\n${USAGE}\n\n${ADMIN_NOTES}`,
    )
    return EXIT.ok
  }
  if (args[0] === '--version' || args[0] === '-V') {
    console.log(VERSION_TEXT)
    return EXIT.ok
  }
  try {
    if (parseCommand(args).positionals.length === 0) throw new UsageError('no command given')
  } catch (err) {
    console.error(`error: ${(err as Error).message}\n\n${USAGE}`)
    return EXIT.usage
  }
  const [command, file, ...extra] = parseCommand(args).positionals
  if (command === 'backup' || command === 'restore') return backupCommand(command, file, extra)
  let deps: Dependencies
  try {
    // Operator output goes to stdout; the service's own logs stay quiet unless they warn.
    deps = await buildDependencies(loadConfig(), { logger: createLogger({ level: 'warn' }) })
  } catch (err) {
    const message = configurationFailure(err)
    if (message === undefined) throw err
    console.error(message)
    return EXIT.config
  }
  try {
    return await runCli(args, deps, (line) => console.log(line))
  } finally {
    await deps.close()
  }
}

/** `backup` and `restore` open storage themselves: neither runs migrations, and a restore finds DATA_DIR as it is. */
async function backupCommand(command: 'backup' | 'restore', file: string | undefined, extra: string[]): Promise<number> {
  if (!file || extra.length > 0) {
    console.error(`error: ${command} takes one FILE\n\n${USAGE}`)
    return EXIT.usage
  }
  let location: ReturnType<typeof loadStorageLocation>
  try {
    location = loadStorageLocation()
  } catch (err) {
    console.error(configurationFailure(err) ?? (err as Error).message)
    return EXIT.config
  }
  const target = resolve(file)
  try {
    if (command === 'restore') {
      const { manifest, files } = await restoreBackup({ ...location, file: target })
      console.log(
        `restored ${files} files of the backup written ${manifest.createdAt} by release ${manifest.release} (schema ${manifest.schemaVersion}) into ${location.dataDir}`,
      )
      return EXIT.ok
    }
    const embedded = join(location.dataDir, 'service.db')
    if (!location.databaseUrl && !existsSync(embedded)) throw new BackupError(`no database at ${embedded}: DATA_DIR holds nothing to back up`)
    const { databaseUrl, dataDir } = location
    const open = () => openDatabase({ databaseUrl, dataDir, maxConnections: 1 })
    const db = databaseUrl ? await reach('DATABASE_URL', databaseUrl, 'PostgreSQL', open) : await open()
    try {
      const manifest = await writeBackup({ dataDir: location.dataDir, db, file: target })
      console.log(`wrote ${target}: ${manifest.files} files, ${manifest.bytes} bytes before compression, schema ${manifest.schemaVersion}`)
      if (manifest.database === 'postgres') console.log('the database itself is not in it: save it with pg_dump (docs/backup.mdx)')
      return EXIT.ok
    } finally {
      await db.close()
    }
  } catch (err) {
    if (!(err instanceof BackupError)) {
      const message = configurationFailure(err)
      if (message === undefined) throw err
      console.error(message)
      return EXIT.config
    }
    console.error(`error: ${err.message}`)
    return EXIT.failed
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)))
