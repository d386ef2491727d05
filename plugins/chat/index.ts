/**
 * Chat's face: the plugin, the chat service and the types other plugins and the composition root use.
 * Enhanced chat starts its turns through `ChatService.startTurn` with a turn of its own.
 */
export { chatPlugin, type ChatPluginOptions } from './routes.ts'
export { createChatService, type ChatService, type ChatServiceOptions } from './service.ts'
export type { ChatSettings, Turn } from './turn.ts'
export { chatRequest, type ChatRequest } from './schemas.ts'
export { createMemoryStreamLog, createRedisStreamLog, type StreamLog } from './stream-log.ts'
export { chatSettings } from './settings.ts'
