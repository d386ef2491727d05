/** Each organisation's default model, in the `default_model` column of organizations (migration 015). */
import type { Database } from '../../src/storage/database.ts'
import type { OrgModelDefaults } from '../../src/llm/models.ts'

export function orgModelDefaults(db: Database): OrgModelDefaults {
  return {
    async get(orgId) {
      const [row] = await db.sql`SELECT default_model FROM organizations WHERE id = ${orgId}`
      return (row?.default_model as string | null | undefined) ?? undefined
    },
    async set(orgId, model) {
      await db.sql`UPDATE organizations SET default_model = ${model} WHERE id = ${orgId}`
    },
  }
}
