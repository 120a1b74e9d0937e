// Expected analytics answers computed straight from the raw events, independently of the SQL.
import type { ActivityEvent } from '../../lib/activity/event.ts'

export interface Stored extends ActivityEvent { ms: number; order: number }

export const stored = (events: ActivityEvent[]): Stored[] => events.map((e, order) => ({ ...e, ms: Date.parse(e.createdAt), order }))

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
const iso = (ms: number) => new Date(ms).toISOString()

// Half away from zero, 4 decimals, from the double quotient (exact for the small counts of the tests).
export function round4 (p: number, q: number): number {
  if (q === 0) return 0
  const r = Math.floor(Math.abs(p) * 10000 / Math.abs(q) + 0.5) / 10000
  return p * q < 0 && r !== 0 ? -r : r
}

export class Oracle {
  readonly all: Stored[]
  constructor (events: ActivityEvent[]) { this.all = stored(events) }

  guild (g: string) { return this.all.filter((e) => e.guildId === g) }
  inWindow (g: string, since: number | null, until: number) { return this.guild(g).filter((e) => (since === null || e.ms >= since) && e.ms < until) }

  username (g: string, userId: string): string {
    let best: Stored | null = null
    for (const e of this.guild(g)) {
      if (e.userId !== userId) continue
      if (best === null || e.ms > best.ms || (e.ms === best.ms && e.order > best.order)) best = e
    }
    return best!.username
  }

  // Ghosts over [since, until): typing / (messages + 1) for members with a typing event, then typing, then id.
  ghosts (g: string, since: number | null, until: number, limit: number) {
    const per = new Map<string, { t: number; m: number }>()
    for (const e of this.inWindow(g, since, until)) {
      if (e.type !== 'typing' && e.type !== 'message') continue
      const c = per.get(e.userId) ?? { t: 0, m: 0 }
      if (e.type === 'typing') c.t++; else c.m++
      per.set(e.userId, c)
    }
    return [...per].filter(([, c]) => c.t > 0)
      .sort(([a, x], [b, y]) => y.t / (y.m + 1) - x.t / (x.m + 1) || y.t - x.t || byBytes(a, b)).slice(0, limit)
      .map(([userId, c]) => ({ userId, username: this.username(g, userId), typingCount: c.t, messageCount: c.m, ghostScore: c.t / (c.m + 1) }))
  }

  lurkers (g: string, since: number | null, until: number, minPresence: number, limit: number) {
    const per = new Map<string, { p: number; active: number; last: number }>()
    for (const e of this.inWindow(g, since, until)) {
      const m = per.get(e.userId) ?? { p: 0, active: 0, last: -Infinity }
      if (e.type === 'presence') { m.p++; m.last = Math.max(m.last, e.ms) }
      if (e.type === 'message' || e.type === 'typing' || e.type === 'reaction') m.active++
      per.set(e.userId, m)
    }
    const list = [...per].filter(([, m]) => m.p >= minPresence && m.active === 0)
      .sort(([a, x], [b, y]) => y.p - x.p || byBytes(a, b)).slice(0, limit)
      .map(([userId, m]) => ({ userId, username: this.username(g, userId), presenceCount: m.p, lastPresenceAt: iso(m.last) }))
    return list
  }

  heatmap (g: string, since: number | null, until: number, timeZone: string, limit: number) {
    const fmt = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', hour: 'numeric', hourCycle: 'h23' })
    const days = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
    const cells = new Map<string, { channelId: string; dayOfWeek: number; hour: number; messages: number; typing: number }>()
    const totals = new Map<string, { channelId: string; messages: number; typing: number }>()
    for (const e of this.inWindow(g, since, until)) {
      if (e.type !== 'message' && e.type !== 'typing') continue
      const parts = Object.fromEntries(fmt.formatToParts(new Date(e.ms)).map((p) => [p.type, p.value]))
      const dayOfWeek = days.indexOf(parts.weekday!)
      const hour = Number(parts.hour)
      const key = `${e.channelId}|${dayOfWeek}|${hour}`
      const c = cells.get(key) ?? { channelId: e.channelId!, dayOfWeek, hour, messages: 0, typing: 0 }
      const t = totals.get(e.channelId!) ?? { channelId: e.channelId!, messages: 0, typing: 0 }
      if (e.type === 'message') { c.messages++; t.messages++ } else { c.typing++; t.typing++ }
      cells.set(key, c)
      totals.set(e.channelId!, t)
    }
    const channels = [...totals.values()].sort((a, b) => (b.messages + b.typing) - (a.messages + a.typing) || byBytes(a.channelId, b.channelId)).slice(0, limit)
    const kept = new Set(channels.map((c) => c.channelId))
    return {
      channels,
      cells: [...cells.values()].filter((c) => kept.has(c.channelId))
        .sort((a, b) => byBytes(a.channelId, b.channelId) || a.dayOfWeek - b.dayOfWeek || a.hour - b.hour)
    }
  }

  roles (g: string, since: number | null, until: number, limit: number) {
    const per = new Map<string, { added: number; removed: number }>()
    for (const e of this.inWindow(g, since, until)) {
      if (e.type !== 'role_change') continue
      const m = per.get(e.userId) ?? { added: 0, removed: 0 }
      if (e.change === 'added') m.added++; else m.removed++
      per.set(e.userId, m)
    }
    return [...per].map(([userId, m]) => ({ userId, username: this.username(g, userId), added: m.added, removed: m.removed, changes: m.added + m.removed, drift: m.added + m.removed >= 2 }))
      .sort((a, b) => b.changes - a.changes || byBytes(a.userId, b.userId)).slice(0, limit)
  }

  clients (g: string, since: number, until: number, limit: number) {
    const prevSince = since - (until - since)
    const clients = (['desktop', 'web', 'mobile'] as const).map((client) => {
      const users = new Set<string>()
      const previousUsers = new Set<string>()
      for (const e of this.guild(g)) {
        if (e.type !== 'presence' || !e.clients!.includes(client)) continue
        if (e.ms >= since && e.ms < until) users.add(e.userId)
        if (e.ms >= prevSince && e.ms < since) previousUsers.add(e.userId)
      }
      return { client, users: users.size, previousUsers: previousUsers.size }
    })
    const first = new Map<string, number>()
    const presentBefore = new Set<string>()
    for (const e of this.guild(g)) {
      if (e.type !== 'presence') continue
      if (e.ms < since) presentBefore.add(e.userId)
      for (const c of e.clients!) {
        const key = `${e.userId}\u0000${c}`
        if (!first.has(key) || e.ms < first.get(key)!) first.set(key, e.ms)
      }
    }
    const order = ['desktop', 'web', 'mobile']
    const newClients = [...first].map(([key, ms]) => {
      const [userId, client] = key.split('\u0000') as [string, string]
      return { userId, client, ms }
    }).filter((x) => x.ms >= since && x.ms < until && presentBefore.has(x.userId))
      .sort((a, b) => a.ms - b.ms || byBytes(a.userId, b.userId) || order.indexOf(a.client) - order.indexOf(b.client))
      .slice(0, limit)
      .map((x) => ({ userId: x.userId, username: this.username(g, x.userId), client: x.client, firstSeenAt: iso(x.ms) }))
    return { clients, newClients }
  }

  shifts (g: string, since: number, until: number, minEvents: number, limit: number) {
    const prevSince = since - (until - since)
    const per = new Map<string, { current: number; previous: number }>()
    for (const e of this.guild(g)) {
      if (e.type !== 'message' && e.type !== 'typing') continue
      const m = per.get(e.userId) ?? { current: 0, previous: 0 }
      if (e.ms >= since && e.ms < until) m.current++
      else if (e.ms >= prevSince && e.ms < since) m.previous++
      else continue
      per.set(e.userId, m)
    }
    return [...per].filter(([, m]) => m.current + m.previous >= minEvents)
      .sort(([a, x], [b, y]) => Math.abs(y.current - y.previous) - Math.abs(x.current - x.previous) || byBytes(a, b))
      .slice(0, limit)
      .map(([userId, { current, previous }]) => ({
        userId,
        username: this.username(g, userId),
        current,
        previous,
        change: round4(current - previous, Math.max(previous, 1)),
        direction: current >= 2 * previous ? 'up' : current * 2 <= previous ? 'down' : 'steady'
      }))
  }

  suspicion (g: string, since: number | null, until: number, minScore: number, limit: number) {
    const firstEver = new Map<string, number>()
    for (const e of this.guild(g)) firstEver.set(e.userId, Math.min(firstEver.get(e.userId) ?? Infinity, e.ms))
    const per = new Map<string, Stored[]>()
    for (const e of this.inWindow(g, since, until)) per.set(e.userId, [...(per.get(e.userId) ?? []), e])
    const out = []
    for (const [userId, list] of per) {
      const n = (f: (e: Stored) => boolean) => list.filter(f).length
      const typing = n((e) => e.type === 'typing')
      const messages = n((e) => e.type === 'message')
      const presence = n((e) => e.type === 'presence')
      const multi = n((e) => e.type === 'presence' && e.clients!.length >= 2)
      const deletes = n((e) => e.type === 'message_delete')
      const roles = n((e) => e.type === 'role_change')
      const timed = n((e) => e.type === 'reaction' && e.latencyMs !== undefined)
      const fast = n((e) => e.type === 'reaction' && e.latencyMs !== undefined && e.latencyMs < 3000)
      const newcomer = since !== null && firstEver.get(userId)! >= since ? 1 : 0
      // Exact fractions [numerator, denominator] of each factor, weights in hundredths.
      const fr: [bigint, bigint, bigint][] = [
        [BigInt(typing), BigInt(typing + messages), 25n],
        [BigInt(multi), BigInt(presence), 20n],
        [BigInt(Math.min(deletes, Math.max(messages, 1))), BigInt(Math.max(messages, 1)), 20n],
        [BigInt(Math.min(roles, 5)), 5n, 15n],
        [BigInt(fast), BigInt(timed), 10n],
        [BigInt(newcomer), 1n, 10n]
      ]
      const common = fr.reduce((acc, [, d]) => (d === 0n ? acc : acc * d), 1n)
      const total = fr.reduce((acc, [p, d, w]) => (d === 0n ? acc : acc + w * p * (common / d)), 0n)
      // round half up of total / common
      const score = Number((total * 2n + common) / (common * 2n))
      if (score < minScore) continue
      out.push({
        userId,
        username: this.username(g, userId),
        score,
        factors: {
          ghost: round4(typing, typing + messages),
          multiClient: round4(multi, presence),
          deletes: Math.min(round4(deletes, Math.max(messages, 1)), 1),
          roleChurn: Math.min(round4(roles, 5), 1),
          fastReactions: round4(fast, timed),
          newcomer
        }
      })
    }
    return out.sort((a, b) => b.score - a.score || byBytes(a.userId, b.userId)).slice(0, limit)
  }

  // A guild's all-time totals, as the dashboard's guild list gives them.
  guildTotals (g: string) {
    const events = this.guild(g)
    return {
      members: new Set(events.map((e) => e.userId)).size,
      events: events.length,
      lastEventAt: events.length === 0 ? null : iso(Math.max(...events.map((e) => e.ms)))
    }
  }

  // The dashboard's overview: totals, every local date of the window in the zone, the busiest channels.
  overview (g: string, since: number, until: number, timeZone: string, limit: number) {
    const types = ['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave'] as const
    const fmt = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    const localDate = (ms: number) => fmt.format(new Date(ms))
    const zero = () => Object.fromEntries(types.map((t) => [t, 0])) as Record<typeof types[number], number>
    const days = new Map<string, { date: string; events: number; users: Set<string>; counts: Record<string, number> }>()
    const last = localDate(until - 1)
    for (let d = localDate(since); d <= last; d = new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)) {
      days.set(d, { date: d, events: 0, users: new Set(), counts: zero() })
    }
    const totals = { events: 0, users: new Set<string>(), counts: zero() as Record<string, number> }
    const channels = new Map<string, { channelId: string; messages: number; typing: number; reactions: number }>()
    for (const e of this.inWindow(g, since, until)) {
      const day = days.get(localDate(e.ms))!
      day.events++
      day.users.add(e.userId)
      day.counts[e.type]!++
      totals.events++
      totals.users.add(e.userId)
      totals.counts[e.type]!++
      if (e.type === 'message' || e.type === 'typing' || e.type === 'reaction') {
        const c = channels.get(e.channelId!) ?? { channelId: e.channelId!, messages: 0, typing: 0, reactions: 0 }
        if (e.type === 'message') c.messages++
        else if (e.type === 'typing') c.typing++
        else c.reactions++
        channels.set(e.channelId!, c)
      }
    }
    return {
      totals: { events: totals.events, members: totals.users.size, ...totals.counts },
      days: [...days.values()].map((d) => ({ date: d.date, events: d.events, members: d.users.size, ...d.counts })),
      channels: [...channels.values()]
        .sort((a, b) => (b.messages + b.typing + b.reactions) - (a.messages + a.typing + a.reactions) || byBytes(a.channelId, b.channelId))
        .slice(0, limit)
    }
  }

  timeline (g: string, userId: string, since: number | null, until: number, types: string[] | null) {
    return this.inWindow(g, since, until).filter((e) => e.userId === userId && (types === null || types.includes(e.type)))
      .sort((a, b) => b.ms - a.ms || b.order - a.order)
      .map((e) => {
        const out: Record<string, unknown> = { type: e.type, createdAt: iso(e.ms) }
        if (e.id !== undefined) out.id = e.id
        if (e.channelId !== undefined) out.channelId = e.channelId
        if (e.latencyMs !== undefined) out.latencyMs = e.latencyMs
        if (e.status !== undefined) out.status = e.status
        if (e.type === 'presence') out.clients = e.clients ?? []
        if (e.roleId !== undefined) out.roleId = e.roleId
        if (e.change !== undefined) out.change = e.change
        return out
      })
  }
}
