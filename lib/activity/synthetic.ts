import { mulberry32 } from '../random.ts'
import { DEMO_GUILD_ID, DEMO_USERS } from '../dev-idp/demo-data.ts'
import type { ActivityEvent } from './event.ts'
import { isoFormatter } from './instant.ts'

export interface SyntheticOptions {
  guilds: number
  users: number
  events: number
  seed: number
  // Events fall in the `days` days before this instant; fixed by default so that output is reproducible.
  end?: Date
  days?: number
}

export const SYNTHETIC_END = new Date('2026-01-01T00:00:00Z')
export const SYNTHETIC_DAYS = 90

const NAMES = ['nova', 'pixel', 'quill', 'ember', 'sable', 'orbit', 'lumen', 'drift', 'cobalt', 'fern', 'juniper', 'onyx', 'wren', 'zephyr', 'moss', 'tide']
const DAY = 86_400_000
const SECOND = 1000

// A stable per-user value in [0, 1) from the seed and the user's number (no generator state consumed).
function userTrait (seed: number, n: number, salt: number): number {
  let h = Math.imul(n ^ Math.imul(seed, 0x9e3779b1) ^ salt, 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296
}

/**
 * Deterministic guild activity: the same options give the same events, generated one at a time (a
 * synchronous generator: no I/O, so no promise per event).
 *
 * Guild sizes and activity follow skewed (Zipf-like) distributions, and members act in sessions: on a
 * day, mostly in the evening (UTC), a member tries to say something a few times; each try is one or
 * more typing events, followed by a message or abandoned. How often a try ends in a message is the
 * member's temperament: lurkers (a fifth) almost never post, chatty members nearly always do. A few
 * members change username once. The first guild is the development identity provider's demo guild,
 * and its first members are the demo users with their usernames.
 */
export function * syntheticActivity (o: SyntheticOptions): Generator<ActivityEvent> {
  const rand = mulberry32(o.seed)
  const end = (o.end ?? SYNTHETIC_END).getTime()
  const days = o.days ?? SYNTHETIC_DAYS
  const start = end - days * DAY
  const guildCount = Math.max(1, o.guilds)
  const userCount = Math.max(o.users, DEMO_USERS.length)

  const guildIds = Array.from({ length: guildCount }, (_, g) => (g === 0 ? DEMO_GUILD_ID : String(710000000000000000n + BigInt(g))))
  // Zipf-like guild weights as a cumulative table, sampled by binary search.
  const weights = guildIds.map((_, g) => 1 / (g + 1) ** 0.8)
  const totalWeight = weights.reduce((a, b) => a + b, 0)
  const cumulative = new Float64Array(guildCount)
  weights.reduce((acc, w, g) => (cumulative[g] = acc + w / totalWeight), 0)
  // Bigger guilds have more members; every guild has at least the demo users' worth.
  const meanMembers = (userCount / guildCount) * 3
  const members = weights.map((w) => Math.min(userCount, Math.max(DEMO_USERS.length + 2, Math.round(meanMembers * (w * guildCount) / totalWeight))))
  const channels = guildIds.map((_, g) => Array.from({ length: 3 + (g % 6) }, (_, c) => String(720000000000000000n + BigInt(g * 16 + c))))

  // Ids and names are built once: the generator runs for millions of events.
  const userIds = Array.from({ length: userCount }, (_, n) => (n < DEMO_USERS.length ? DEMO_USERS[n].id : String(800000000000000000n + BigInt(n))))
  const usernames = Array.from({ length: userCount }, (_, n) => (n < DEMO_USERS.length ? DEMO_USERS[n].username : `${NAMES[n % NAMES.length]}${n}`))
  const postRate = new Float64Array(userCount)
  const renamedAt = new Float64Array(userCount).fill(Infinity)
  for (let n = 0; n < userCount; n++) {
    const temperament = userTrait(o.seed, n, 1)
    postRate[n] = temperament < 0.2 ? 0.02 + temperament * 0.3 : temperament < 0.8 ? 0.55 + (temperament - 0.2) * 0.5 : 0.9 + (temperament - 0.8) * 0.45
    if (n >= DEMO_USERS.length && userTrait(o.seed, n, 2) < 0.02) renamedAt[n] = start + userTrait(o.seed, n, 3) * days * DAY
  }
  const pickGuild = (r: number) => {
    let lo = 0
    let hi = guildCount - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid] < r) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  const iso = isoFormatter()
  let emitted = 0
  while (emitted < o.events) {
    const g = pickGuild(rand())
    // Member 0 is the most active; members of guild g are a contiguous run of the user pool.
    const member = Math.floor(rand() ** 2.5 * members[g])
    const n = g === 0 ? member : (g * 7919 + member) % userCount
    const guildChannels = channels[g]
    const channelId = guildChannels[Math.floor(rand() * rand() * guildChannels.length)]
    const hour = rand() < 0.6 ? 17 + Math.floor(rand() * 7) : Math.floor(rand() * 24)
    let at = start + Math.floor(rand() * days) * DAY + hour * 3_600_000 + Math.floor(rand() * 3_600_000)
    const tries = 1 + Math.floor(-Math.log(1 - rand()) * 3)
    for (let i = 0; i < tries && emitted < o.events && at < end; i++) {
      const typings = 1 + Math.floor(-Math.log(1 - rand()) * 1.2)
      const posts = rand() < postRate[n]
      for (let k = 0; k <= typings && emitted < o.events && at < end; k++) {
        const type = k < typings ? 'typing' : posts ? 'message' : null
        if (type) {
          yield { type, guildId: guildIds[g], channelId, userId: userIds[n], username: at >= renamedAt[n] ? `${usernames[n]}_` : usernames[n], createdAt: iso(at) }
          emitted++
        }
        at += (3 + Math.floor(rand() * 9)) * SECOND
      }
      at += (10 + Math.floor(rand() * 240)) * SECOND
    }
  }
}
