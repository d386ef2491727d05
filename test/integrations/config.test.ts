import { afterAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/main/config.ts'
import { providersFromConfig } from '../../plugins/integrations/providers/index.ts'
import { tempDir } from '../helpers.ts'

const dir = tempDir()
afterAll(() => dir.remove())
const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dir.path, ...env })

function problemsOf(env: Record<string, string>): string[] {
  try {
    load(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  throw new Error('configuration was accepted')
}

const gitlab = {
  clientId: 'id',
  clientSecret: 'secret',
  authorizeUrl: 'https://gitlab.com/oauth/authorize',
  tokenUrl: 'https://gitlab.com/oauth/token',
  accountUrl: 'https://gitlab.com/api/v4/user',
}

describe('integrations configuration', () => {
  test("defaults: the real providers' endpoints, unconfigured apps, a return page under PUBLIC_BASE_URL", () => {
    const { integrations, secrets } = load({ PUBLIC_BASE_URL: 'https://app.example' })
    expect(integrations).toMatchObject({
      returnUrl: 'https://app.example/integrations',
      stateTtlSeconds: 600,
      statusCacheTtlSeconds: 60,
      github: {
        clientId: undefined,
        authorizeUrl: 'https://github.com/login/oauth/authorize',
        tokenUrl: 'https://github.com/login/oauth/access_token',
        apiUrl: 'https://api.github.com',
        scopes: ['repo', 'read:user'],
      },
      supabase: {
        authorizeUrl: 'https://api.supabase.com/v1/oauth/authorize',
        tokenUrl: 'https://api.supabase.com/v1/oauth/token',
        apiUrl: 'https://api.supabase.com',
        revokeUrl: 'https://api.supabase.com/v1/oauth/revoke',
      },
      generic: [],
    })
    expect(secrets.previousTokenEncryptionKeys).toEqual([])
    expect(providersFromConfig(integrations).map((p) => [p.definition.id, p.client])).toEqual([
      ['github', undefined],
      ['supabase', undefined],
    ])
  })

  test('a configured app, scopes and return page', () => {
    const { integrations } = load({
      GITHUB_CLIENT_ID: 'cid',
      GITHUB_CLIENT_SECRET: 'csecret',
      GITHUB_SCOPES: 'read:user, public_repo',
      INTEGRATIONS_RETURN_URL: 'https://front.example/settings/',
    })
    expect(integrations.returnUrl).toBe('https://front.example/settings')
    expect(providersFromConfig(integrations)[0]).toMatchObject({ client: { clientId: 'cid', clientSecret: 'csecret' }, scopes: ['read:user', 'public_repo'] })
  })

  test('OAUTH_PROVIDERS entries become generic providers with their defaults', () => {
    const { integrations } = load({ OAUTH_PROVIDERS: JSON.stringify({ gitlab }) })
    expect(integrations.generic).toEqual([
      {
        id: 'gitlab',
        label: 'gitlab',
        ...gitlab,
        revokeUrl: undefined,
        accountId: 'id',
        accountName: undefined,
        scopes: [],
        scopeSeparator: ' ',
        clientAuth: 'body',
        authorizeParams: {},
      },
    ])
    const [, , provider] = providersFromConfig(integrations)
    expect(provider!.definition).toMatchObject({ id: 'gitlab', kind: 'generic', variables: ['OAUTH_PROVIDERS'] })
  })

  test('every problem in OAUTH_PROVIDERS is listed at once, each naming provider and field', () => {
    const problems = problemsOf({
      OAUTH_PROVIDERS: JSON.stringify({
        'Bad Id': gitlab,
        github: gitlab,
        vercel: { ...gitlab, clientSecret: undefined, tokenUrl: 'not a url', scope: 'x', scopes: 'read', clientAuth: 'header' },
      }),
    })
    expect(problems).toEqual([
      expect.stringContaining('OAUTH_PROVIDERS.Bad Id: the id must be'),
      'OAUTH_PROVIDERS.github: github is a built-in provider; configure it with its own variables',
      expect.stringContaining('OAUTH_PROVIDERS.vercel.scope is not a known field'),
      'OAUTH_PROVIDERS.vercel.scopes must be an array of scope names without spaces',
      'OAUTH_PROVIDERS.vercel.clientAuth must be "basic" or "body"',
      'OAUTH_PROVIDERS.vercel.clientSecret is required',
      'OAUTH_PROVIDERS.vercel.tokenUrl must be a URL, got "not a url"',
    ])
    expect(problemsOf({ OAUTH_PROVIDERS: '{"gitlab": ' })[0]).toStartWith('OAUTH_PROVIDERS must be JSON')
    expect(problemsOf({ OAUTH_PROVIDERS: '[]' })).toEqual(['OAUTH_PROVIDERS must be a JSON object keyed by provider id ({"gitlab": {...}})'])
  })

  test('half a client pair, a short previous key and out-of-range TTLs are refused together', () => {
    const problems = problemsOf({
      SUPABASE_CLIENT_ID: 'only-the-id',
      TOKEN_ENCRYPTION_PREVIOUS_KEYS: 'too-short',
      OAUTH_STATE_TTL_SECONDS: '5',
      GITHUB_TOKEN_URL: 'ftp://github.example',
    })
    expect(problems).toEqual(
      expect.arrayContaining([
        'SUPABASE_CLIENT_ID and SUPABASE_CLIENT_SECRET must be set together',
        'TOKEN_ENCRYPTION_PREVIOUS_KEYS entry 1 must be at least 32 characters',
        expect.stringContaining('OAUTH_STATE_TTL_SECONDS must be between 30 and 3600'),
        expect.stringContaining('GITHUB_TOKEN_URL must use http: or https:'),
      ]),
    )
  })
})
