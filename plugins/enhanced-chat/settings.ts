/** Enhanced chat's slice of the configuration: the ceilings of a plan-and-check turn. */
import { defineSettings, integer } from '../../src/config.ts'

export const enhancedChatSettings = defineSettings({
  title: 'Enhanced chat',
  variables: {
    ENHANCED_CHAT_MAX_STEPS: { doc: 'Default and ceiling of plan steps in an enhanced chat turn', parse: integer(1, 10), fallback: 5 },
    ENHANCED_CHAT_TIME_LIMIT_SECONDS: {
      doc: "Default and ceiling of an enhanced chat turn's time; unfinished steps are skipped",
      parse: integer(5, 3600),
      fallback: 180,
    },
    ENHANCED_CHAT_MAX_ATTEMPTS: { doc: 'Default and ceiling of check-and-repair attempts per piece of code', parse: integer(1, 10), fallback: 3 },
  },
  build: (v) => ({
    enhancedChat: { maxSteps: v.ENHANCED_CHAT_MAX_STEPS, timeLimitSeconds: v.ENHANCED_CHAT_TIME_LIMIT_SECONDS, maxAttempts: v.ENHANCED_CHAT_MAX_ATTEMPTS },
  }),
})
