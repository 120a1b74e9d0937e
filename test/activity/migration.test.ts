import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { ghostsForGuild } from '../../db/activity.ts'
import { dbKinds, unmigratedDatabase } from '../helper.ts'

// A database filled under the first activity schema keeps its rows through 004 and answers ghosts.
for (const kind of dbKinds) {
  t.test(`004 reshapes filled activity tables on ${kind}`, async (t) => {
    const { handle, step } = await unmigratedDatabase(t, kind)
    await step('003_activity')
    await sql`INSERT INTO activity_events (guild_id, channel_id, user_id, username, type, created_at) VALUES
      ('g', 'c', 'b', 'bee', 'typing', '2025-03-01T10:00:00Z'), ('g', 'c', 'a', 'ay', 'typing', '2025-03-01T11:00:00Z')`.execute(handle.db)
    await sql`INSERT INTO activity_daily (guild_id, user_id, day, typing_count, message_count) VALUES
      ('g', 'b', '2025-03-01', 1, 0), ('g', 'a', '2025-03-01', 1, 0)`.execute(handle.db)
    await sql`INSERT INTO activity_totals (guild_id, user_id, typing_count, message_count, username, last_seen_at) VALUES
      ('g', 'b', 1, 0, 'bee', '2025-03-01T10:00:00Z'), ('g', 'a', 1, 0, 'ay', '2025-03-01T11:00:00Z')`.execute(handle.db)

    await step('004_activity_rank')
    const expected = [
      { userId: 'a', username: 'ay', typingCount: 1, messageCount: 0, ghostScore: 1 },
      { userId: 'b', username: 'bee', typingCount: 1, messageCount: 0, ghostScore: 1 }
    ]
    t.same(await ghostsForGuild(handle.db, { guildId: 'g', limit: 10 }), expected, 'totals kept, ties by user id')
    t.same(await ghostsForGuild(handle.db, { guildId: 'g', since: new Date('2025-03-01T10:30:00Z'), limit: 10 }), [expected[0]], 'raw events kept')
    t.same(await ghostsForGuild(handle.db, { guildId: 'g', since: new Date('2025-03-01T00:00:00Z'), limit: 10 }), expected, 'daily rollup kept')

    await step('003_activity')
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity_totals`.execute(handle.db)
    t.equal(rows[0].n, 2, 'down migration keeps the rows too')
    await step('004_activity_rank')
  })
}

// Stored typing and message events go through 008 unchanged, gain a storage order, and take every type after it.
for (const kind of dbKinds) {
  t.test(`008 keeps stored events and takes every type on ${kind}`, async (t) => {
    const { handle, step } = await unmigratedDatabase(t, kind)
    await step('007_change_bus')
    await sql`INSERT INTO activity_events (guild_id, channel_id, user_id, username, type, created_at) VALUES
      ('g', 'c', 'b', 'bee', 'typing', '2025-03-01T10:00:00Z'), ('g', 'c', 'b', 'bee', 'message', '2025-03-02T11:00:00Z')`.execute(handle.db)
    await sql`INSERT INTO activity_users (guild_id, user_id, typing_count, message_count, username, last_seen_at) VALUES
      ('g', 'b', 1, 1, 'bee', '2025-03-02T11:00:00Z')`.execute(handle.db)
    await step('008_activity_events')
    const { rows } = await sql<{ type: string; channel_id: string; seq: string }>`SELECT type, channel_id, seq FROM activity_events ORDER BY created_at`.execute(handle.db)
    t.same(rows.map((r) => [r.type, r.channel_id]), [['typing', 'c'], ['message', 'c']], 'events kept')
    t.ok(rows.every((r) => Number(r.seq) > 0), 'with a storage order')
    const { rows: [member] } = await sql<{ first: Date }>`SELECT first_seen_at AS first FROM activity_users`.execute(handle.db)
    t.equal(member.first.toISOString(), '2025-03-01T10:00:00.000Z', 'first event of the member from the stored events')
    await sql`INSERT INTO activity_events (guild_id, user_id, username, type, created_at, status, clients, event_id) VALUES
      ('g', 'b', 'bee', 'presence', '2025-03-03T00:00:00Z', 'online', '{web}', 'e1')`.execute(handle.db)
    await t.rejects(sql`INSERT INTO activity_events (guild_id, user_id, username, type, created_at, event_id) VALUES
      ('g', 'b', 'bee', 'join', '2025-03-03T00:00:00Z', 'e1')`.execute(handle.db), /unique/, 'an id once per guild')
    await t.rejects(sql`INSERT INTO activity_events (guild_id, user_id, username, type, created_at) VALUES
      ('g', 'b', 'bee', 'voice', '2025-03-03T00:00:00Z')`.execute(handle.db), /check/)
    // 010 fills the rollups from the stored events.
    await step('010_activity_rollups')
    const { rows: [daily] } = await sql<{ p: number; mask: number; e: number }>`SELECT sum(presence_count)::int AS p, bit_or(client_mask)::int AS mask, sum(event_count)::int AS e FROM activity_daily`.execute(handle.db)
    t.same(daily, { p: 1, mask: 2, e: 3 }, 'the daily rollup counts every type')
    const { rows: quarters } = await sql<{ n: number }>`SELECT sum(message_count + typing_count)::int AS n FROM activity_channel_quarters`.execute(handle.db)
    t.equal(quarters[0].n, 2)
    const { rows: clients } = await sql<{ client: string }>`SELECT client FROM activity_member_clients`.execute(handle.db)
    t.same(clients, [{ client: 'web' }])
    await step('007_change_bus')
    const { rows: after } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity_events`.execute(handle.db)
    t.equal(after[0].n, 2, 'down keeps the typing and message events')
    await step('010_activity_rollups')
  })
}
