import { mulberry32 } from '../random.ts'
import { DEMO_GUILD_ID, DEMO_USERS } from '../dev-idp/demo-data.ts'
import type { ActivityEvent } from './event.ts'

export interface SyntheticOptions {
  guilds: number
  users: number
  events: number
  seed: number
  // Events fall in the 90 days before this instant.
  end?: Date
}

const NAMES = ['nova', 'pixel', 'quill', 'ember', 'sable', 'orbit', 'lumen', 'drift', 'cobalt', 'fern', 'juniper', 'onyx', 'wren', 'zephyr']
const DAY = 86_400_000

/**
 * Deterministic guild activity: the same options give the same events. Guild sizes follow a skewed
 * distribution, and every user has a temperament: lurkers type and rarely post, regulars post most
 * of what they type. The first guild is the development provider's demo guild, with its demo users.
 */
export async function* syntheticActivity(o: SyntheticOptions): AsyncGenerator<ActivityEvent> {
  const rand = mulberry32(o.seed)
  const end = (o.end ?? new Date(Date.UTC(2026, 0, 1))).getTime()
  const guildIds = Array.from({ length: o.guilds }, (_, i) => (i === 0 ? DEMO_GUILD_ID : String(710000000000000000n + BigInt(i))))
  // Zipf-like guild weights, as cumulative sums for sampling.
  const weights = guildIds.map((_, i) => 1 / (i + 1) ** 0.8)
  const total = weights.reduce((a, b) => a + b, 0)
  const cumulative: number[] = []
  weights.reduce((acc, w, i) => (cumulative[i] = acc + w / total), 0)
  const membersPerGuild = Math.max(5, Math.ceil((o.users / o.guilds) * 3))
  const userCount = Math.max(o.users, DEMO_USERS.length + 1)
  // Ids and names are built once: the generator runs for millions of events.
  const userIds = Array.from({ length: userCount }, (_, n) => (n < DEMO_USERS.length ? DEMO_USERS[n].id : String(800000000000000000n + BigInt(n))))
  const usernames = Array.from({ length: userCount }, (_, n) => (n < DEMO_USERS.length ? DEMO_USERS[n].username : `${NAMES[n % NAMES.length]}${n}`))
  const channelIds = Array.from({ length: o.guilds * 10 + 5 }, (_, c) => String(720000000000000000n + BigInt(c)))
  // A user's share of messages among what they type: lurkers near 0, regulars near 1.
  const postRate = (n: number) => {
    const h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) >>> 0
    const x = (h % 1000) / 1000
    return x < 0.2 ? x * 0.25 : 0.3 + x * 0.7
  }
  for (let i = 0; i < o.events; i++) {
    const r = rand()
    let g = 0
    while (g < cumulative.length - 1 && cumulative[g] < r) g++
    const member = Math.floor(rand() ** 1.5 * membersPerGuild)
    const n = g === 0 && member < DEMO_USERS.length ? member : (g * 7919 + member * 104729) % userCount
    const type = rand() < postRate(n) / (1 + postRate(n)) ? 'message' : 'typing'
    yield {
      type,
      guildId: guildIds[g],
      channelId: channelIds[g * 10 + Math.floor(rand() * 5)],
      userId: userIds[n],
      username: usernames[n],
      createdAt: new Date(end - Math.floor(rand() * 90 * DAY)).toISOString()
    }
  }
}
