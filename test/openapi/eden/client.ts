/**
 * A front end calling the service through Eden Treaty, as docs/api-clients.mdx shows: only the app's type is
 * imported, so no server code is bundled; paths, bodies and answers are typed from the routes' schemas.
 * test/openapi/eden.test.ts typechecks this file as a project outside src/ would and runs it against the app.
 */
import { treaty, type Treaty } from '@elysiajs/eden'
import type { App } from '../../../src/main/app.ts'

export type Api = Treaty.Create<App>

/** `target` is the service's URL, or (in tests) the app itself. */
export function connect(target: string | App, token?: string): Api {
  return treaty<App>(target, { headers: token ? { authorization: `Bearer ${token}` } : {} })
}

export async function signIn(api: Api, email: string, password: string) {
  const { data, error } = await api.auth.login.post({ email, password })
  if (error) throw new Error(`sign-in refused: ${error.status}`)
  // Integers are numbers: the token's lifetime in milliseconds.
  const expiresInMs: number = data.expiresIn * 1000
  return { accessToken: data.accessToken, expiresInMs, scopes: data.scopes }
}

export async function whoAmI(api: Api): Promise<{ userId: string; scopes: string[] } | undefined> {
  const { data } = await api.auth.me.get()
  return data ? { userId: data.userId, scopes: data.scopes } : undefined
}

export async function recentChats(api: Api) {
  const { data, error } = await api.api.chats.get()
  if (error) return { refused: error.status }
  return { titles: data.chats.map((chat) => chat.title), newest: Math.max(0, ...data.chats.map((chat) => chat.updatedAt)) }
}

export async function oneChat(api: Api, id: string) {
  const { data, error } = await api.api.chat({ id }).get()
  return error ? { refused: error.status } : { messages: data.messages.length }
}

export async function health(api: Api) {
  const { data } = await api.health.get()
  return data?.status
}
