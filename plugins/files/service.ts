/**
 * Uploaded files as a service: storing them within the organisation's quota, reading them back, and turning the
 * files a chat message names into what the model reads (images as image parts, text and PDFs as text).
 * A file is the organisation's: any member may read it and attach it; its uploader, an owner or an admin deletes it.
 */
import type { Caller } from '../../src/auth/caller.ts'
import type { Role } from '../../src/auth/roles.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { UiMessage, UiPart } from '../../src/llm/ui-stream.ts'
import type { Database } from '../../src/storage/database.ts'
import { asAttachmentText, capText, pdfText } from './extract.ts'
import type { FilesSettings } from './settings.ts'
import { ACCEPTED_TYPES, cleanFileName, sniff } from './sniff.ts'
import { FileStore, type StoredFile } from './store.ts'

export interface FilesServiceOptions {
  db: Database
  logger: Logger
  settings: FilesSettings
}

/** What the API answers about a file. */
export interface FileInfo {
  id: string
  name: string
  mediaType: string
  size: number
  createdAt: number
}

export const info = (file: StoredFile): FileInfo => ({ id: file.id, name: file.name, mediaType: file.mediaType, size: file.size, createdAt: file.createdAt })

const notFound = () => new AppError('not_found', 'No file with this id')

export function tooLargeFile(limitBytes: number): AppError {
  return new AppError('file_too_large', `The file exceeds FILES_MAX_BYTES (${limitBytes} bytes)`, { extensions: { limitBytes } })
}

export function newFileId(): string {
  return `file_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`
}

/** The file a UI message part names: `{ type: 'file', fileId }` or the AI SDK's `{ type: 'file', url: 'file:<id>' }`. */
export function referencedFileId(part: UiPart): string | undefined {
  if (part.type !== 'file') return undefined
  if (typeof part.fileId === 'string') return part.fileId
  if (typeof part.url === 'string' && part.url.startsWith('file:')) return part.url.slice('file:'.length)
  return undefined
}

export function createFilesService(options: FilesServiceOptions) {
  const store = new FileStore(options.db)
  const { settings, logger } = options

  async function own(caller: Caller, id: string): Promise<StoredFile> {
    const file = await store.file(caller.orgId, id)
    if (!file) throw notFound()
    return file
  }

  /** What the model reads of one file: an image part, or a text part with the file's (extracted) text. */
  async function modelPart(file: StoredFile): Promise<UiPart> {
    const bytes = await store.content(file.id)
    if (!bytes) throw notFound()
    if (file.mediaType.startsWith('image/'))
      return { type: 'file', mediaType: file.mediaType, filename: file.name, url: `data:${file.mediaType};base64,${Buffer.from(bytes).toString('base64')}` }
    let text: string
    if (file.mediaType === 'application/pdf') {
      try {
        text = await pdfText(bytes, settings.textMaxChars)
      } catch (err) {
        logger.warn('files: PDF text extraction failed', { fileId: file.id, err })
        text = '[the text of this PDF could not be read]'
      }
    } else text = capText(new TextDecoder().decode(bytes), settings.textMaxChars)
    return { type: 'text', text: asAttachmentText(file, text) }
  }

  return {
    /**
     * Stores an upload: 413 over FILES_MAX_BYTES, 415 when its bytes are not an accepted type (whatever it was
     * declared as), 409 when the organisation's files would exceed FILES_ORG_QUOTA_BYTES.
     */
    async upload(caller: Caller, upload: File): Promise<FileInfo> {
      if (upload.size > settings.maxBytes) throw tooLargeFile(settings.maxBytes)
      const bytes = new Uint8Array(await upload.arrayBuffer())
      const sniffed = sniff(bytes, upload.type, cleanFileName(upload.name))
      if (!sniffed)
        throw new AppError('unsupported_file_type', 'The file is not an accepted type: PNG, JPEG, GIF or WebP images, PDF, or UTF-8 text', {
          extensions: { accepted: ACCEPTED_TYPES },
        })
      const file: StoredFile = {
        id: newFileId(),
        orgId: caller.orgId,
        userId: caller.userId,
        name: cleanFileName(upload.name),
        mediaType: sniffed.mediaType,
        size: bytes.byteLength,
        createdAt: Date.now(),
      }
      if (!(await store.insertWithinQuota(file, bytes, settings.orgQuotaBytes)))
        throw new AppError('quota_exceeded', `The organisation's files would exceed FILES_ORG_QUOTA_BYTES (${settings.orgQuotaBytes} bytes)`, {
          extensions: { quotaBytes: settings.orgQuotaBytes },
        })
      return info(file)
    },

    /** The file's metadata; 404 for a file of another organisation, as for none. */
    async file(caller: Caller, id: string): Promise<FileInfo> {
      return info(await own(caller, id))
    },

    async content(caller: Caller, id: string): Promise<{ file: FileInfo; bytes: Uint8Array }> {
      const file = await own(caller, id)
      const bytes = await store.content(file.id)
      if (!bytes) throw notFound()
      return { file: info(file), bytes }
    },

    /** Deletes the file: its uploader, or an owner or admin of the organisation (403 for other members). */
    async remove(caller: Caller & { role: Role }, id: string): Promise<{ deleted: true; id: string }> {
      const file = await own(caller, id)
      if (file.userId !== caller.userId && caller.role !== 'owner' && caller.role !== 'admin')
        throw new AppError('forbidden', "Only the file's uploader, an owner or an admin deletes it")
      await store.deleteFiles([file.id])
      return { deleted: true, id: file.id }
    },

    /**
     * The history as the model should read it: each file a user message names (see `referencedFileId`) replaced
     * by what the model reads of it. A file named in the messages from `from` on (the ones this request adds)
     * must be the caller's organisation's, else 404 and nothing is read; one named earlier that has since been
     * deleted is replaced by a note. Answers the ids of the files the new messages name.
     */
    async resolveAttachments(caller: Caller, history: readonly UiMessage[], from: number): Promise<{ history: UiMessage[]; fileIds: string[] }> {
      const newIds: string[] = []
      const found = new Map<string, StoredFile | undefined>()
      for (const [index, message] of history.entries()) {
        if (message.role !== 'user') continue
        for (const part of message.parts) {
          const id = referencedFileId(part)
          if (id === undefined) continue
          if (!found.has(id)) found.set(id, await store.file(caller.orgId, id))
          if (index >= from) {
            if (!found.get(id)) throw notFound()
            newIds.push(id)
          }
        }
      }
      if (found.size === 0) return { history: [...history], fileIds: [] }
      const parts = new Map<string, Promise<UiPart>>()
      const partFor = (id: string) => {
        const file = found.get(id)
        if (!file) return Promise.resolve<UiPart>({ type: 'text', text: `[attachment ${id} has been deleted]` })
        if (!parts.has(id)) parts.set(id, modelPart(file))
        return parts.get(id)!
      }
      const resolved = await Promise.all(
        history.map(async (message) => {
          if (message.role !== 'user' || !message.parts.some((p) => referencedFileId(p) !== undefined)) return message
          const replaced = await Promise.all(message.parts.map((p) => (referencedFileId(p) === undefined ? p : partFor(referencedFileId(p)!))))
          return { ...message, parts: replaced }
        }),
      )
      return { history: resolved, fileIds: [...new Set(newIds)] }
    },

    /** Records that the chat holds these files, so deleting the chat deletes them. */
    linkToChat: (chatId: string, fileIds: readonly string[]) => store.linkToChat(chatId, fileIds),

    /** Deletes the files attached to the chat that no other chat holds (the chat is being deleted). */
    async deleteForChat(chatId: string): Promise<{ files: number }> {
      return { files: await store.deleteFiles(await store.unlinkChat(chatId)) }
    },

    /** A user's uploads (their account is deleted). */
    async deleteUser(userId: string): Promise<{ files: number }> {
      return { files: await store.deleteFiles(await store.idsOfUser(userId)) }
    },

    async deleteOrganisation(orgId: string): Promise<{ files: number }> {
      return { files: await store.deleteFiles(await store.idsOfOrganisation(orgId)) }
    },
  }
}

export type FilesService = ReturnType<typeof createFilesService>
