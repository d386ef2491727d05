/** First run's slice of the configuration. */
import { defineSettings, integer } from '../../src/config.ts'

export const setupSettings = defineSettings({
  title: 'First run',
  variables: {
    SETUP_CODE_TTL_SECONDS: {
      doc: 'How long the one-time setup code logged at start-up (while no user exists) can create the first owner at /setup',
      parse: integer(60, 7 * 86_400),
      fallback: 3600,
    },
  },
  build: (v) => ({
    /** While no user exists, each start logs a one-time code that creates the first owner at /setup. */
    setup: { codeTtlSeconds: v.SETUP_CODE_TTL_SECONDS },
  }),
})
