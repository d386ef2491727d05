/**
 * Chat as a service: stores the conversation, starts the generation that answers it, and lets
 * clients follow, resume and cancel it. Enhanced chat starts its own kind of turn through it.
 */
import type { Lifecycle } from '../../src/lifecycle.ts'
import type { CancelChannel } from '../../src/event-log/cancel.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { ExtraTools } from '../../src/llm/extra-tools.ts'
import { providerNotConfigured } from '../../src/llm/models.ts'
import type { ModelProvider } from '../../src/llm/provider.ts'
import { createMessageBuilder } from '../../src/llm/message-builder.ts'
import { newMessageId } from '../../src/llm/ui-messages.ts'
import type { Emit, UiChunk, UiMessage } from '../../src/llm/ui-stream.ts'
import type { Database } from '../../src/storage/database.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { CodeIndex } from '../code-search/index.ts'
import type { WebSearchService } from '../web-search/index.ts'
import { createGenerationHub } from './generations.ts'
import { firstChange, mergeHistory, titleFor } from './history.ts'
import type { ChatRequest } from './schemas.ts'
import { ChatStore, type Chat, type ChatListKey } from './store.ts'
import type { GenerationMeta, StreamLog } from './stream-log.ts'
import { runTurn, type ChatSettings, type Turn, type TurnServices } from './turn.ts'
import type { AgentRunner } from './tools.ts'
import type { Caller } from '../../src/auth/caller.ts'

export interface ChatServiceOptions {
  db: Database
  logger: Logger
  /** Refuses new long work while the process drains (503 with Retry-After, so a proxy sends it elsewhere). */
  admission?: Pick<Lifecycle, 'admitLongWork'>
  /** Undefined when no model provider is configured: starting a turn answers 503 not_configured. */
  provider: ModelProvider | undefined
  webSearch: Pick<WebSearchService, 'search' | 'configured'>
  codeIndex?: Pick<CodeIndex, 'search'>
  /** Runs agent tasks for the run_agent tool; without it the tool is not offered. */
  agents?: AgentRunner
  meter?: Pick<UsageMeter, 'record'>
  settings: ChatSettings
  /** The tools of the organisation's MCP servers; without it none are offered. */
  extraTools?: ExtraTools
  log: StreamLog
  maxGenerationMs: number
  /** Cancels reach the process running a generation through it; in process only when unset. */
  cancels?: CancelChannel
  /** Files that messages name by id (`file:<id>`): checked and read for the model; without it such parts are ignored. */
  attachments?: Attachments
}

/** Resolves the files a history names into what the model reads, and records the chats that hold them. */
export interface Attachments {
  /** 404 for a file of another organisation among the messages from `from` on; answers the history the model reads. */
  resolveAttachments(caller: Caller, history: readonly UiMessage[], from: number): Promise<{ history: UiMessage[]; fileIds: string[] }>
  linkToChat(chatId: string, fileIds: readonly string[]): Promise<void>
}

export type { Caller }

/**
 * Called once a chat is deleted (by its owner, or with their account), after its messages and stored stream
 * went: what other parts of the service keep for the chat (files attached to it) goes here. The composition
 * root registers them with `ChatService.onChatDeleted`.
 */
export type ChatDeletedHook = (chat: Pick<Chat, 'id' | 'orgId' | 'userId'>) => Promise<unknown>

const notFound = () => new AppError('not_found', 'No chat with this id')

export function newChatId(): string {
  return `chat_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`
}

export function createChatService(options: ChatServiceOptions) {
  const store = new ChatStore(options.db)
  const hub = createGenerationHub({ log: options.log, logger: options.logger, maxGenerationMs: options.maxGenerationMs, cancels: options.cancels })

  // A generation whose process died is stored with the text that reached its log, marked interrupted.
  options.log.onInterrupted(async (meta, chunks) => {
    if (!meta.messageId || meta.position === undefined) return
    const builder = createMessageBuilder(meta.messageId)
    for (const chunk of chunks) builder.add(JSON.parse(chunk) as UiChunk)
    await store.addAnswerOnce(meta.chatId, meta.position, builder.message('interrupted'))
  })

  function requireProvider(): ModelProvider {
    if (options.provider) return options.provider
    throw providerNotConfigured()
  }

  const services = (): TurnServices => ({
    provider: requireProvider(),
    webSearch: options.webSearch,
    codeIndex: options.codeIndex,
    agents: options.agents,
    meter: options.meter,
    settings: options.settings,
    extraTools: options.extraTools,
  })

  /** The caller's chat, or 404 for a chat that does not exist, is deleted or is someone else's. */
  async function ownChat(caller: Caller, chatId: string): Promise<Chat> {
    const chat = await store.chat(chatId)
    if (!chat || chat.userId !== caller.userId || chat.deletedAt !== undefined) throw notFound()
    return chat
  }

  const deletedHooks: ChatDeletedHook[] = []

  /** Runs every hook; one failing is logged and does not keep the others from running or undo the deletion. */
  async function chatDeleted(chat: Pick<Chat, 'id' | 'orgId' | 'userId'>): Promise<void> {
    for (const hook of deletedHooks) await hook(chat).catch((err) => options.logger.error('chat deleted: a hook failed', { err, chatId: chat.id }))
  }

  /** Stops the chat's running generation (in whichever process), then forgets its stored streams. */
  async function stopAndForget(chatId: string): Promise<void> {
    await hub.stop(chatId)
    await options.log.forget(chatId)
  }

  return {
    configured: options.provider !== undefined,

    /**
     * Stores the request's messages in the chat and starts the generation answering them.
     * `produce` replaces the ordinary chat turn (enhanced chat brings its own).
     */
    async startTurn(
      caller: Caller,
      request: Pick<ChatRequest, 'id' | 'messages'> & { turn?: Partial<Turn> },
      produce?: (turn: Turn, emit: Emit, signal: AbortSignal) => Promise<UiMessage>,
    ): Promise<{ chatId: string; generationId: string; done: Promise<void> }> {
      options.admission?.admitLongWork('chat turns')
      const turnServices = services()
      // A chat id made here is new: there is nothing to look up.
      const chatId = request.id ?? newChatId()
      const chat = request.id === undefined ? undefined : await store.chat(chatId)
      // A deleted chat's id stays taken: continuing it is a 404, as for someone else's.
      if (chat && (chat.userId !== caller.userId || chat.deletedAt !== undefined)) throw notFound()
      const stored = chat ? await store.messages(chatId) : []
      const history = mergeHistory(stored, request.messages)
      // Read before anything is stored or metered: with the stream log unreachable the request fails here, leaving nothing behind.
      const previous = await hub.active(chatId)
      const from = firstChange(stored, history)
      // Files named by id are checked (and read) before anything is stored: another organisation's file is a 404.
      const attached = options.attachments ? await options.attachments.resolveAttachments(caller, history, from) : undefined
      await store.save({ id: chatId, orgId: caller.orgId, userId: caller.userId, title: chat?.title ?? titleFor(history) }, from, history.slice(from), {
        fresh: request.id === undefined,
      })
      if (attached?.fileIds.length) await options.attachments!.linkToChat(chatId, attached.fileIds)
      options.meter?.record({ ...caller, kind: 'chat_request' })
      const turn: Turn = { ...request.turn, messageId: newMessageId(), orgId: caller.orgId, userId: caller.userId, history: attached?.history ?? history }
      const meta = { chatId, userId: caller.userId, messageId: turn.messageId, position: history.length }
      const started = await hub.start(
        meta,
        async (emit, signal, logLost) => {
          const answer = await (produce ?? ((t, e, s) => runTurn(turnServices, t, e, s)))(turn, emit, signal)
          // A lost log was ended by a follower, which stores what reached it; this process's copy may say more than any client saw.
          if (!logLost.aborted) await store.appendAnswer(chatId, history.length, answer)
        },
        { previous },
      )
      return { chatId, ...started }
    },

    ownChat,

    /**
     * One page of the caller's chats, most recent first (by updatedAt, then id), from after `after`, each saying
     * whether a generation is running for it; `more` when a next page has any. `q`: titles containing it.
     */
    async chats(caller: Caller, page: { limit: number; after?: ChatListKey; q?: string }): Promise<{ chats: (Chat & { active: boolean })[]; more: boolean }> {
      const found = await store.chats(caller.userId, { ...page, limit: page.limit + 1 })
      const chats = found.slice(0, page.limit)
      const active = await Promise.all(chats.map((c) => hub.active(c.id)))
      return { chats: chats.map((c, i) => ({ ...c, active: !!active[i] })), more: found.length > page.limit }
    },

    /** Renames the caller's chat; 404 for one that is unknown, deleted or someone else's. */
    async rename(caller: Caller, chatId: string, title: string): Promise<Chat & { active: boolean }> {
      const renamed = await store.rename(chatId, caller.userId, title)
      if (!renamed) throw notFound()
      return { ...renamed, active: !!(await hub.active(chatId)) }
    },

    /**
     * Deletes the caller's chat (404 for one that is unknown, deleted or someone else's). It is gone for every
     * read at once: the row is marked deleted and its messages deleted in one transaction. Then its running
     * generation is stopped, wherever it runs, its stored streams are forgotten, what the generation stored while
     * ending is deleted, and the deletion hooks run (files attached to the chat).
     */
    async deleteChat(caller: Caller, chatId: string): Promise<void> {
      const chat = await store.markDeleted(chatId, caller.userId)
      if (!chat) throw notFound()
      await stopAndForget(chatId)
      await store.purgeMessages(chatId)
      await chatDeleted(chat)
    },

    /** Registers what runs once a chat is deleted (see ChatDeletedHook). */
    onChatDeleted(hook: ChatDeletedHook): void {
      deletedHooks.push(hook)
    },

    /** The caller's chat with its messages, or 404. */
    async chatWithMessages(caller: Caller, chatId: string): Promise<Chat & { active: boolean; messages: UiMessage[] }> {
      const found = await ownChat(caller, chatId)
      const [messages, active] = await Promise.all([store.messages(found.id), hub.active(found.id)])
      return { ...found, active: !!active, messages }
    },

    /** The chat's running generation, wherever it runs. */
    activeGeneration: (chatId: string) => hub.active(chatId),

    /**
     * The generation a resume should follow: the one Last-Event-ID names if it belongs to the chat, else the
     * active one. Nothing for a chat that is unknown or someone else's, as for one with nothing running: a
     * client resuming a chat id it has just made up is not in error, and no one learns which ids exist.
     */
    async resumable(
      caller: Caller,
      chatId: string,
      lastEvent?: { generationId: string; seq: number },
    ): Promise<{ meta: GenerationMeta; afterSeq: number } | undefined> {
      const chat = await store.chat(chatId)
      if (!chat || chat.userId !== caller.userId) return undefined
      // The owner of a deleted chat is told it is gone (an AI SDK client then shows an error, not an empty answer).
      if (chat.deletedAt !== undefined) throw notFound()
      if (lastEvent) {
        const named = await hub.meta(lastEvent.generationId)
        if (named && named.chatId === chatId) return { meta: named, afterSeq: lastEvent.seq }
      }
      const active = await hub.active(chatId)
      return active ? { meta: active, afterSeq: 0 } : undefined
    },

    follow: (generationId: string, afterSeq: number, signal: AbortSignal) => options.log.follow(generationId, afterSeq, signal),

    async cancel(caller: Caller, chatId: string) {
      await ownChat(caller, chatId)
      return hub.cancel(chatId)
    },

    /**
     * Deletes every chat of the user, their messages and their stored streams, each running generation stopped
     * first so nothing is written after (an account's deletion). Answers how many chats were deleted.
     */
    async deleteChatsOf(userId: string): Promise<{ chats: number; messages: number }> {
      const chats = await store.chatsOf(userId)
      for (const chat of chats) await stopAndForget(chat.id)
      const removed = await store.deleteChats(chats.map((c) => c.id))
      for (const chat of chats) await chatDeleted(chat)
      return removed
    },

    /** Generations running in this process. */
    get runningCount() {
      return hub.runningCount
    },

    /** Resolves once no generation runs here (a draining process lets its answers finish). */
    idle: () => hub.idle(),

    async close() {
      await hub.close()
      await options.log.close()
    },
  }
}

export type ChatService = ReturnType<typeof createChatService>
