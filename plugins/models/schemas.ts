import { t } from 'elysia'
import { strictObject } from '../../src/schemas.ts'

export const modelEntry = t.Object({
  id: t.String({ description: 'What a request names as `model`: plain for the OPENAI_* provider, `<provider>/<model>` for MODEL_PROVIDERS' }),
  provider: t.String({ description: "The provider's name in MODEL_PROVIDERS; `openai` for the OPENAI_* one" }),
  default: t.Boolean({ description: "The organisation's default" }),
})

export const modelList = t.Object({
  models: t.Array(modelEntry),
  default: t.String({ description: "The organisation's default model: its own choice, else CHAT_MODEL" }),
})

export const orgModelBody = strictObject({
  model: t.Union([t.String({ minLength: 1, maxLength: 200 }), t.Null()], { description: 'One of GET /api/models; null goes back to the service default' }),
})
