/** The playground page: sign in (or find the session the browser has), then try chat, enhanced chat and an agent task. */
import { agentPanel } from './agent.ts'
import { chatPanel } from './chat.ts'
import { byId } from './dom.ts'
import { onSessionEnd, resume, signIn, signOut } from './session.ts'

const signInForm = byId<HTMLFormElement>('sign-in')
const signInError = byId('sign-in-error')
const workspace = byId('workspace')
const who = byId('who')

const chat = chatPanel('chat', '/api/chat', (form) => {
  const search = (form.elements.namedItem('search') as HTMLSelectElement).value
  return search ? { options: { searchAugmentation: search === 'on' } } : {}
})
const enhanced = chatPanel('enhanced', '/api/enhanced-chat', (form) => {
  const tests = (form.elements.namedItem('tests') as HTMLTextAreaElement).value
  return tests.trim() ? { tests } : {}
})
const agent = agentPanel()

function showWorkspace(email?: string) {
  signInForm.hidden = email !== undefined
  workspace.hidden = email === undefined
  who.textContent = email ? `Signed in as ${email}` : ''
  byId('sign-out').hidden = email === undefined
  document.body.dataset.session = email === undefined ? 'signed-out' : 'signed-in'
}

function closeWorkspace() {
  agent.disconnect()
  chat.reset()
  enhanced.reset()
  showWorkspace()
}

signInForm.addEventListener('submit', async (event) => {
  event.preventDefault()
  const field = (name: string) => (signInForm.elements.namedItem(name) as HTMLInputElement).value
  signInError.textContent = ''
  try {
    const session = await signIn(field('email'), field('password'))
    ;(signInForm.elements.namedItem('password') as HTMLInputElement).value = ''
    showWorkspace(session.email)
  } catch (err) {
    signInError.textContent = `Sign-in failed: ${(err as Error).message}`
  }
})

byId('sign-out').addEventListener('click', async () => {
  await signOut()
  closeWorkspace()
})

// Signed out elsewhere (another tab, an operator) or the session expired: back to the sign-in form.
onSessionEnd(closeWorkspace)

// A reload, or the page after setup: the browser's session cookie signs the page in without a password.
resume().then((session) => showWorkspace(session?.email))

// Tabs: each button shows its panel.
const tabs = [...document.querySelectorAll<HTMLButtonElement>('[role="tab"]')]
for (const tab of tabs)
  tab.addEventListener('click', () => {
    for (const other of tabs) {
      const selected = other === tab
      other.setAttribute('aria-selected', String(selected))
      byId(other.getAttribute('aria-controls')!).hidden = !selected
    }
  })
