/**
 * A chat panel on the AI SDK's own chat machinery: `AbstractChat` (what `useChat` runs) with
 * `DefaultChatTransport`, and a state that redraws the panel when it changes. Used for POST /api/chat and
 * POST /api/enhanced-chat, which write the same UI message stream.
 */
import { AbstractChat, DefaultChatTransport, type ChatState, type ChatStatus, type UIMessage } from 'ai'
import { byId, el, externalLink, shortJson } from './dom.ts'
import { markdown } from './markdown.ts'
import { accessToken } from './session.ts'

type Part = UIMessage['parts'][number]

/** The chat's state as plain fields; every change asks for one redraw on the next frame. */
class RedrawingState implements ChatState<UIMessage> {
  #status: ChatStatus = 'ready'
  #error: Error | undefined
  #messages: UIMessage[] = []
  #pending = false

  constructor(private readonly redraw: () => void) {}

  private changed() {
    if (this.#pending) return
    this.#pending = true
    requestAnimationFrame(() => {
      this.#pending = false
      this.redraw()
    })
  }

  get status() {
    return this.#status
  }
  set status(status: ChatStatus) {
    this.#status = status
    this.changed()
  }
  get error() {
    return this.#error
  }
  set error(error: Error | undefined) {
    this.#error = error
    this.changed()
  }
  get messages() {
    return this.#messages
  }
  set messages(messages: UIMessage[]) {
    this.#messages = messages
    this.changed()
  }
  // The chat hands over the message it keeps writing into: a copy marks what changed, for redraw().
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.#messages, this.snapshot(message)]
  }
  popMessage = () => {
    this.messages = this.#messages.slice(0, -1)
  }
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.#messages.map((m, i) => (i === index ? this.snapshot(message) : m))
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

class PanelChat extends AbstractChat<UIMessage> {
  constructor(api: string, redraw: () => void) {
    super({
      // The page's `ai` 7 reader understands `reset-step`: an unsure draft is withdrawn rather than kept.
      transport: new DefaultChatTransport<UIMessage>({
        api,
        headers: () => ({ authorization: `Bearer ${accessToken()}`, 'x-ui-stream-features': 'reset-step' }),
      }),
      state: new RedrawingState(redraw),
    })
  }
}

// biome-ignore lint/suspicious/noExplicitAny: a data part's payload, shown field by field
const data = (part: Part) => ((part as { data?: unknown }).data ?? {}) as Record<string, any>

function toolCall(part: Part): HTMLElement {
  const call = part as { type: string; toolName?: string; state?: string; input?: unknown; output?: unknown; errorText?: string }
  const name = call.type === 'dynamic-tool' ? (call.toolName ?? 'tool') : call.type.slice('tool-'.length)
  return el(
    'div',
    { class: 'part tool', 'data-part': 'tool', 'data-tool': name, 'data-state': call.state ?? '' },
    el('div', { class: 'label' }, `Tool call: ${name} (${call.state ?? 'pending'})`),
    call.input !== undefined && el('pre', { class: 'input' }, shortJson(call.input)),
    call.output !== undefined && el('details', {}, el('summary', {}, 'Output'), el('pre', {}, shortJson(call.output, 2000))),
    call.errorText && el('div', { class: 'error' }, call.errorText),
  )
}

function searchDecision(part: Part): HTMLElement {
  const d = data(part)
  // Without a measure (a tool call came first, say) only the reason is shown.
  const measured =
    typeof d.confidence === 'number' ? ` (confidence ${d.confidence.toFixed(2)}, threshold ${d.threshold}, ${d.method} over ${d.tokens} tokens)` : ''
  return el(
    'div',
    { class: 'part decision', 'data-part': 'search-decision', 'data-decision': String(d.decision) },
    el('strong', {}, d.decision === 'search' ? 'Searching the web' : 'Answering without search'),
    `: ${d.reason}${measured}`,
  )
}

function plan(part: Part): HTMLElement {
  const steps = (data(part).steps ?? []) as { index: number; title: string; status: string }[]
  return el(
    'div',
    { class: 'part plan', 'data-part': 'plan' },
    el('div', { class: 'label' }, 'Plan'),
    el('ol', {}, ...steps.map((s) => el('li', { 'data-status': s.status }, `${s.title} `, el('span', { class: 'badge' }, s.status)))),
  )
}

function step(part: Part): HTMLElement {
  const d = data(part)
  const verdict = d.verdict ? ` · ${d.verdict} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}` : ''
  return el(
    'div',
    { class: 'part step', 'data-part': 'step', 'data-status': String(d.status) },
    `Step ${Number(d.index) + 1}: ${d.title} (${d.status}${verdict})`,
  )
}

function check(part: Part): HTMLElement {
  const d = data(part)
  return el(
    'div',
    { class: 'part check', 'data-part': 'check', 'data-verdict': String(d.verdict) },
    `Check of step ${Number(d.step) + 1}, attempt ${d.attempt} of ${d.maxAttempts}${d.mode ? ` (${d.mode})` : ''}: `,
    el('strong', {}, String(d.verdict)),
    d.durationMs !== undefined && ` in ${d.durationMs} ms`,
    d.output && el('details', {}, el('summary', {}, 'Output'), el('pre', {}, String(d.output))),
  )
}

function renderPart(part: Part, role: UIMessage['role']): HTMLElement | undefined {
  switch (part.type) {
    case 'text':
      // The model's answer is Markdown (sanitised); what the user typed is shown as typed.
      return role === 'user'
        ? el('div', { class: 'part text', 'data-part': 'text' }, part.text)
        : markdown(part.text, { class: 'part text', 'data-part': 'text' })
    case 'reasoning':
      return el('details', { class: 'part reasoning', 'data-part': 'reasoning' }, el('summary', {}, 'Reasoning'), el('div', {}, part.text))
    case 'file':
      return part.mediaType.startsWith('image/') && part.url.startsWith('data:')
        ? el('img', { class: 'part file', 'data-part': 'file', src: part.url, alt: part.filename ?? 'Generated image' })
        : el('div', { class: 'part file', 'data-part': 'file' }, externalLink(part.url, part.filename ?? part.url))
    case 'data-search-decision':
      return searchDecision(part)
    case 'data-plan':
      return plan(part)
    case 'data-step':
      return step(part)
    case 'data-check':
      return check(part)
    case 'step-start':
    case 'source-url':
    case 'source-document':
      return undefined
  }
  if (part.type === 'dynamic-tool' || part.type.startsWith('tool-')) return toolCall(part)
  if (part.type.startsWith('data-')) return el('pre', { class: 'part data', 'data-part': part.type }, `${part.type}: ${shortJson(data(part))}`)
  return undefined
}

function renderMessage(message: UIMessage): HTMLElement {
  const sources = message.parts.filter((p) => p.type === 'source-url')
  return el(
    'article',
    { class: 'message', 'data-role': message.role },
    el('div', { class: 'role' }, message.role === 'user' ? 'You' : 'Assistant'),
    ...message.parts.map((part) => renderPart(part, message.role)),
    sources.length > 0 &&
      el(
        'div',
        { class: 'part sources', 'data-part': 'sources' },
        el('div', { class: 'label' }, 'Sources'),
        el('ol', {}, ...sources.map((s) => el('li', {}, externalLink(s.url, s.title ?? s.url)))),
      ),
  )
}

/**
 * Wires the panel `#<name>`: its `.messages` list, its form (a `text` field, optional fields read by
 * `body`), its Stop and New chat buttons and its `.status` line.
 */
export function chatPanel(name: string, api: string, body: (form: HTMLFormElement) => object) {
  const panel = byId(name)
  const list = panel.querySelector<HTMLElement>('.messages')!
  const form = panel.querySelector('form')!
  const status = panel.querySelector<HTMLElement>('.status')!
  const stop = panel.querySelector<HTMLButtonElement>('[data-action="stop"]')!
  // Messages are redrawn only when the chat replaced them, so an opened <details> stays open.
  const drawn = new Map<UIMessage, HTMLElement>()

  const redraw = () => {
    const elements = chat.messages.map((m) => drawn.get(m) ?? renderMessage(m))
    drawn.clear()
    for (const [i, m] of chat.messages.entries()) drawn.set(m, elements[i]!)
    list.replaceChildren(...elements)
    const busy = chat.status === 'submitted' || chat.status === 'streaming'
    stop.disabled = !busy
    status.dataset.status = chat.status
    status.textContent = chat.error ? `Error: ${chat.error.message}` : busy ? `${chat.status}…` : ''
    if (busy) list.lastElementChild?.scrollIntoView({ block: 'end' })
  }
  let chat = new PanelChat(api, redraw)

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const field = form.elements.namedItem('text') as HTMLTextAreaElement
    const text = field.value.trim()
    if (!text || chat.status === 'submitted' || chat.status === 'streaming') return
    field.value = ''
    void chat.sendMessage({ text }, { body: body(form) })
  })
  stop.addEventListener('click', () => void chat.stop())
  /** Stops any answer and starts a chat with a new id. */
  const reset = () => {
    void chat.stop()
    chat = new PanelChat(api, redraw)
    redraw()
  }
  panel.querySelector('[data-action="new"]')!.addEventListener('click', reset)
  return { reset }
}
