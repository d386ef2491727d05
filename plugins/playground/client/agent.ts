/**
 * The agent panel: a `debug`, `develop` or `build_site` task over GET /ws/agent (messages as GET /api/agents/protocol
 * describes them), drawn as a progress bar with the time left, the task's log, its result (./results.ts) labelled
 * by its outcome, and a Cancel button. The access token goes as the subprotocol pair ['bearer', token], since a
 * browser cannot set Authorization here.
 */
import { byId, el } from './dom.ts'
import { OUTCOME_LABEL, outcomeOf, taskResult } from './results.ts'
import { accessToken } from './session.ts'

/** The commands the panel runs, each with the form fields it reads (a fieldset `data-command` of the form). */
type Command = 'debug' | 'develop' | 'build_site'

/** The command's params from its fieldset: empty fields are left out; checks are one command line a line. */
function paramsOf(command: Command, fields: HTMLFieldSetElement): Record<string, unknown> {
  const params: Record<string, unknown> = {}
  for (const field of fields.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('input, textarea')) {
    if (field instanceof HTMLInputElement && field.type === 'checkbox') {
      if (field.checked) params[field.name] = true
    } else if (field.name === 'checks') {
      const checks = field.value
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean)
      if (checks.length > 0) params.checks = checks
    } else if (field.value.trim()) params[field.name] = command === 'debug' ? field.value : field.value.trim()
  }
  return params
}

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
  const commandField = form.querySelector<HTMLSelectElement>('[name="command"]')!
  const fieldsets = [...form.querySelectorAll<HTMLFieldSetElement>('fieldset[data-command]')]

  const chosen = () => commandField.value as Command
  const showFields = () => {
    for (const fields of fieldsets) {
      fields.hidden = fields.dataset.command !== chosen()
      fields.disabled = fields.hidden
    }
    run.textContent = `Run ${chosen().replace('_', ' ')} task`
  }
  commandField.addEventListener('change', showFields)
  showFields()

  let socket: WebSocket | undefined
  let taskId: string | undefined
  let taskCommand: Command = 'debug'
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
      case 'result': {
        // The task ended with a result; whether it did what was asked is in the output.
        const outcome = outcomeOf(message.output)
        bar.value = 100
        showStatus(outcome, OUTCOME_LABEL[outcome])
        result.replaceChildren(...taskResult(taskCommand, message.output))
        finish()
        break
      }
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
    const command = chosen()
    const params = paramsOf(command, fieldsets.find((fields) => fields.dataset.command === command)!)
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
            taskCommand = command
            cancel.disabled = false
            onMessage(message)
          }
          resolve()
        }
        ws.addEventListener('message', listen)
      })
      ws.send(JSON.stringify({ type: 'agent_command', id, command, params }))
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
