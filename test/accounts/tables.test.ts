import { expect, test } from 'bun:test'
import { PERSONAL_TABLES } from '../../plugins/accounts/index.ts'
import { forEachBackend } from '../helpers.ts'

// Tables whose rows name a user or an organisation without a user_id or org_id column, handled by deletion too.
const KEYED_OTHERWISE = { organizations: 'id', users: 'id' }

forEachBackend((backend) => {
  test(`every table with a user_id or org_id column has its deletion decided (${backend.name})`, async () => {
    const db = await backend.open()
    try {
      const rows =
        db.db.dialect === 'postgres'
          ? await db.db.sql`SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns WHERE table_schema = current_schema()`
          : await db.db.sql`SELECT m.name AS "table", p.name AS "column" FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'`
      const personal = new Set<string>(Object.keys(KEYED_OTHERWISE))
      for (const { table, column } of rows as { table: string; column: string }[]) if (column === 'user_id' || column === 'org_id') personal.add(table)
      // A new table here fails until plugins/accounts/tables.ts says what deletion does with it (and deletion.ts does it).
      expect([...personal].sort()).toEqual(Object.keys(PERSONAL_TABLES).sort())
    } finally {
      await db.close()
    }
  })
})
