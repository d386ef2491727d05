/**
 * A front end as an AI SDK user writes it, served from another origin than the API: it signs in, keeps its
 * token in sessionStorage and its chat id in the URL, so a reload finds the chat again and `useChat`
 * resumes the answer still being generated. The browser test reads what it shows.
 */
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, type UIMessage } from 'ai'
import { useEffect, useRef, useState, type FormEvent } from 'react'
import { createRoot } from 'react-dom/client'

/** Written into the page by the server that serves it. */
interface PageConfig {
  /** The API's origin, `http://127.0.0.1:<port>`. */
  api: string
  email: string
  password: string
}

const config = JSON.parse(document.getElementById('config')!.textContent!) as PageConfig

async function signIn(): Promise<string> {
  const kept = sessionStorage.getItem('accessToken')
  if (kept) return kept
  const response = await fetch(`${config.api}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: config.email, password: config.password }),
  })
  if (!response.ok) throw new Error(`sign-in answered ${response.status}`)
  const { accessToken } = (await response.json()) as { accessToken: string }
  sessionStorage.setItem('accessToken', accessToken)
  return accessToken
}

/** The chat id in the URL, or a new one put there. */
function chatIdFromUrl(): string {
  const url = new URL(location.href)
  let id = url.searchParams.get('chat')
  if (!id) {
    id = `chat_${crypto.randomUUID().replaceAll('-', '')}`
    url.searchParams.set('chat', id)
    history.replaceState(null, '', url)
  }
  return id
}

/** The chat's stored messages; a chat never used yet has none. */
async function storedMessages(id: string, token: string): Promise<UIMessage[]> {
  const response = await fetch(`${config.api}/api/chat/${id}`, { headers: { authorization: `Bearer ${token}` } })
  if (response.status === 404) return []
  if (!response.ok) throw new Error(`GET /api/chat/${id} answered ${response.status}`)
  return ((await response.json()) as { messages: UIMessage[] }).messages
}

/** Opens the agent WebSocket and answers the first message the server sends (the pong to a ping). */
function firstAgentMessage(token: string): Promise<{ protocol: string; message: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${config.api.replace(/^http/, 'ws')}/ws/agent`, ['bearer', token])
    socket.onopen = () => socket.send(JSON.stringify({ type: 'ping', id: 'first' }))
    socket.onmessage = (event) => {
      resolve({ protocol: socket.protocol, message: JSON.parse(String(event.data)) })
      socket.close()
    }
    socket.onclose = (event) => reject(new Error(`closed with ${event.code} before any message`))
  })
}

const textOf = (message: UIMessage) =>
  message.parts
    .filter((part) => part.type === 'text')
    .map((part) => (part as { text: string }).text)
    .join('')

function Chat({ id, token, stored }: { id: string; token: string; stored: UIMessage[] }) {
  const [transport] = useState(
    () =>
      new DefaultChatTransport({
        api: `${config.api}/api/chat`,
        // A header of the page's own besides the token: the preflight allows any.
        headers: () => ({ authorization: `Bearer ${token}`, 'x-page': 'chat-page' }),
        prepareReconnectToStreamRequest: ({ id: chatId }) => ({ api: `${config.api}/api/chat/${chatId}/stream` }),
      }),
  )
  const { messages, sendMessage, status, error } = useChat({ id, messages: stored, resume: true, transport })
  const [prompt, setPrompt] = useState('')
  const sentAt = useRef<number | undefined>(undefined)
  const [firstTokenMs, setFirstTokenMs] = useState<number | undefined>(undefined)

  // Time to first token: from the click to the first answer text on screen.
  const last = messages.at(-1)
  const answered = last?.role === 'assistant' && textOf(last) !== ''
  useEffect(() => {
    if (answered && sentAt.current !== undefined) {
      setFirstTokenMs(performance.now() - sentAt.current)
      sentAt.current = undefined
    }
  }, [answered])

  const send = (event: FormEvent) => {
    event.preventDefault()
    sentAt.current = performance.now()
    setFirstTokenMs(undefined)
    void sendMessage({ text: prompt })
    setPrompt('')
  }

  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} data-role={message.role}>
            {textOf(message)}
          </li>
        ))}
      </ol>
      <form onSubmit={send}>
        <input id="prompt" value={prompt} onChange={(event) => setPrompt(event.target.value)} />
        <button id="send" type="submit" disabled={status !== 'ready'}>
          Send
        </button>
      </form>
      <output id="status">{status}</output>
      <output id="error">{error?.message ?? ''}</output>
      <output id="first-token-ms">{firstTokenMs === undefined ? '' : firstTokenMs.toFixed(1)}</output>
    </main>
  )
}

async function main() {
  const token = await signIn()
  const id = chatIdFromUrl()
  const stored = await storedMessages(id, token)
  Object.assign(window, { firstAgentMessage: () => firstAgentMessage(token) })
  createRoot(document.getElementById('root')!).render(<Chat id={id} token={token} stored={stored} />)
}

main().catch((error: Error) => {
  document.getElementById('root')!.textContent = `failed: ${error.message}`
})
