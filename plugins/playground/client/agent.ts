/**
 * The agent panel: a `debug` task over GET /ws/agent (messages as GET /api/agents/protocol describes them),
 * drawn as a progress bar with the time left, the task's log, its result, and a Cancel button. The access
 * token goes as the subprotocol pair ['bearer', token], since a browser cannot set Authorization here.
 */
import { byId, el, shortJson } from './dom.ts'
import { accessToken } from './session.ts'

// biome-ignore lint/suspicious/noExplicitAny: the page shows whatever fields a server message has
type ServerMessage = { type: string; [field: string]: any }

export function agentPanel() {
  const panel = byId('agent')
  const form = panel.querySelector('form')!
  const run = form.querySelector<HTMLButtonElement>('[data-action="run"]')!
  const cancel = panel.querySelector<HTMLButtonElement>('[data-action="cancel"]')!
  const bar = panel.querySelector('progress')!
  const progressText = panel.querySelector<HTMLElement>('.progress-text')!
  const status = panel.querySelector<HTMLElement>('.status')!
  const log = panel.querySelector<HTMLElement>('.log')!
  const result = panel.querySelector<HTMLElement>('.result')!

  let socket: WebSocket | undefined
  let taskId: string | undefined
  let counter = 0

  const showStatus = (state: string, text: string) => {
    status.dataset.status = state
    status.textContent = text
  }
  const finish = () => {
    taskId = undefined
    cancel.disabled = true
    run.disabled = false
  }

  function onMessage(message: ServerMessage) {
    // Direct answers carry the client's id; task messages carry the task's.
    if (message.taskId !== undefined && message.taskId !== taskId) return
    switch (message.type) {
      case 'ack':
        showStatus('queued', `Task ${message.taskId} queued`)
        break
      case 'progress': {
        if (message.percent !== undefined) bar.value = message.percent
        const parts = [`${message.percent ?? Math.round(bar.value)}%`, message.step, message.eta && `about ${message.eta} left`]
        progressText.textContent = parts.filter(Boolean).join(' · ')
        showStatus(message.status, message.status)
        break
      }
      case 'log':
        log.append(el('li', { 'data-level': message.level }, message.message))
        break
      case 'cancelling':
        showStatus('cancelling', 'Cancelling…')
        break
      case 'result':
        bar.value = 100
        showStatus('succeeded', 'Succeeded')
        result.replaceChildren(...debugResult(message.output))
        finish()
        break
      case 'error':
        // With a status it ends the task; without, it answers one message (a refused command, say).
        showStatus(message.status ?? 'error', `${message.status === 'cancelled' ? 'Cancelled' : 'Failed'}: ${message.message} (${message.code})`)
        if (message.status || message.id?.startsWith('run-')) finish()
        break
    }
  }

  function connect(): Promise<WebSocket> {
    if (socket && socket.readyState === WebSocket.OPEN) return Promise.resolve(socket)
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/agent`
    const opened = new WebSocket(url, ['bearer', accessToken()])
    return new Promise((resolve, reject) => {
      opened.onopen = () => {
        socket = opened
        resolve(opened)
      }
      opened.onerror = () => reject(new Error('the agent connection was refused'))
      opened.onmessage = (event) => onMessage(JSON.parse(String(event.data)) as ServerMessage)
      opened.onclose = (event) => {
        if (socket === opened) socket = undefined
        if (taskId) {
          showStatus('disconnected', `Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ''})`)
          finish()
        }
      }
    })
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const params: Record<string, string> = {}
    for (const name of ['code', 'error', 'tests']) {
      const value = (form.elements.namedItem(name) as HTMLTextAreaElement).value
      if (value.trim()) params[name] = value
    }
    run.disabled = true
    bar.value = 0
    progressText.textContent = ''
    log.replaceChildren()
    result.replaceChildren()
    showStatus('connecting', 'Connecting…')
    try {
      const ws = await connect()
      const id = `run-${++counter}`
      // The ack names the task; until then messages of any task are ignored.
      const acked = new Promise<void>((resolve) => {
        const listen = (event: MessageEvent) => {
          const message = JSON.parse(String(event.data)) as ServerMessage
          if (message.id !== id) return
          ws.removeEventListener('message', listen)
          // A refusal (an error with our id) was already shown by onMessage.
          if (message.type === 'ack') {
            taskId = message.taskId
            cancel.disabled = false
            onMessage(message)
          }
          resolve()
        }
        ws.addEventListener('message', listen)
      })
      ws.send(JSON.stringify({ type: 'agent_command', id, command: 'debug', params }))
      await acked
    } catch (err) {
      showStatus('error', (err as Error).message)
      finish()
    }
  })

  cancel.addEventListener('click', () => {
    if (!socket || !taskId) return
    cancel.disabled = true
    socket.send(JSON.stringify({ type: 'cancel', id: `cancel-${++counter}`, taskId }))
  })

  return {
    disconnect() {
      finish()
      socket?.close(1000, 'signed out')
      socket = undefined
    },
  }
}

/** A debug task's output: whether the fix passed, the fixed program and the explanation. */
// biome-ignore lint/suspicious/noExplicitAny: a task's output, shown field by field as far as it has them
function debugResult(output: any): HTMLElement[] {
  if (!output || typeof output !== 'object' || !('passed' in output)) return [el('pre', {}, shortJson(output, 4000))]
  const checks = (output.checks ?? []) as { step: number; attempt: number; verdict: string }[]
  return [
    el('p', { 'data-passed': String(output.passed) }, el('strong', {}, output.passed ? 'The fix passed its checks' : 'No fix passed its checks')),
    checks.length > 0 && el('ul', {}, ...checks.map((c) => el('li', {}, `Step ${c.step}, attempt ${c.attempt}: ${c.verdict}`))),
    output.fix && el('pre', { class: 'fix' }, output.fix.code),
    el('details', {}, el('summary', {}, 'Explanation'), el('div', { class: 'text' }, output.explanation ?? '')),
  ].filter((node): node is HTMLElement => Boolean(node))
}
