import { t, type Static } from 'elysia'
import { integer, strictObject } from '../../src/schemas.ts'
import { chatRequest } from '../chat/index.ts'

export const enhancedOptions = strictObject(
  {
    maxSteps: t.Optional(integer({ minimum: 1, maximum: 10, description: 'Most plan steps worked through. Default and ceiling ENHANCED_CHAT_MAX_STEPS' })),
    timeLimitSeconds: t.Optional(
      integer({
        minimum: 5,
        maximum: 3600,
        description: 'Time for the whole turn; unfinished steps are skipped. Default and ceiling ENHANCED_CHAT_TIME_LIMIT_SECONDS',
      }),
    ),
    maxAttempts: t.Optional(
      integer({ minimum: 1, maximum: 10, description: 'Check-and-repair rounds per piece of code. Default and ceiling ENHANCED_CHAT_MAX_ATTEMPTS' }),
    ),
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })),
  },
  { description: 'Limits of the enhanced turn' },
)

export const enhancedChatRequest = strictObject({
  id: chatRequest.properties.id,
  messages: chatRequest.properties.messages,
  trigger: chatRequest.properties.trigger,
  messageId: chatRequest.properties.messageId,
  model: chatRequest.properties.model,
  options: t.Optional(enhancedOptions),
  tests: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 100_000,
      description:
        'Tests the code must pass: for TypeScript or JavaScript code, bun tests importing from "./main"; for Python code, unittest tests importing from main. Without them the code is run and must exit 0',
    }),
  ),
})

export type EnhancedChatRequest = Static<typeof enhancedChatRequest>
