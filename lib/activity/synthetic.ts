import { mulberry32 } from '../random.ts'
import { DEMO_GUILD_ID, DEMO_USERS } from '../dev-idp/demo-data.ts'
import { CLIENT_KINDS, type ActivityEvent, type ClientKind } from './event.ts'
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
 * member's temperament: a fifth almost never post, chatty members nearly always do. A few members
 * change username once. Every event type appears: a session starts with a presence (the member's
 * devices), may hold reactions (with their latency), deletions, role changes, an offline presence,
 * a leave and a re-join; newcomers' first event is their join. Events carry ids unique per seed, so a
 * second load of the same events stores nothing new. The first guild is the development identity provider's demo guild,
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

  // Behaviours, each a stable trait of the user: pure lurkers (presence only), members whose activity
  // shifts into or out of the last week, multi-device members and members who add a device, deleters,
  // fast reactors, role churners, and newcomers who join in the second half of the period.
  const LURKER = 1
  const SHIFT_UP = 2
  const SHIFT_DOWN = 3
  const kind = new Uint8Array(userCount)
  const devices: ClientKind[][] = []
  const newDeviceAt = new Float64Array(userCount).fill(Infinity)
  const deleter = new Uint8Array(userCount)
  const fastReactor = new Uint8Array(userCount)
  const churner = new Uint8Array(userCount)
  const joinAt = new Float64Array(userCount).fill(-Infinity)
  for (let n = 0; n < userCount; n++) {
    const k = userTrait(o.seed, n, 4)
    kind[n] = n < DEMO_USERS.length ? 0 : k < 0.08 ? LURKER : k < 0.16 ? SHIFT_UP : k < 0.24 ? SHIFT_DOWN : 0
    const d = userTrait(o.seed, n, 5)
    devices.push(d < 0.12 ? ['desktop', 'mobile'] : d < 0.2 ? ['desktop', 'web', 'mobile'] : d < 0.25 ? ['web', 'mobile'] : d < 0.7 ? ['desktop'] : d < 0.9 ? ['mobile'] : ['web'])
    // A new kind of device, taken up in the last two weeks.
    if (userTrait(o.seed, n, 6) < 0.2) newDeviceAt[n] = end - Math.floor(userTrait(o.seed, n, 7) * Math.min(days, 14) * DAY)
    // The demo users: ada on desktop and phone, grace on desktop who starts using the web client three days before the end.
    if (n === 0) devices[n] = ['desktop', 'mobile']
    if (n === 1) {
      devices[n] = ['desktop']
      newDeviceAt[n] = end - 3 * DAY
    }
    deleter[n] = userTrait(o.seed, n, 8) < 0.08 ? 1 : 0
    fastReactor[n] = userTrait(o.seed, n, 9) < 0.1 ? 1 : 0
    churner[n] = userTrait(o.seed, n, 10) < 0.06 ? 1 : 0
    if (n >= DEMO_USERS.length && userTrait(o.seed, n, 11) < 0.1) joinAt[n] = start + Math.floor((0.5 + 0.45 * userTrait(o.seed, n, 12)) * days * DAY)
  }
  const clientsAt = (n: number, at: number): ClientKind[] => {
    const own = devices[n]
    if (at < newDeviceAt[n]) return own
    const extra = CLIENT_KINDS.find((c) => !own.includes(c))
    return extra ? [...own, extra] : own
  }
  const joined = new Set<number>()
  const iso = isoFormatter()
  const idPrefix = `s${o.seed.toString(36)}-`
  let emitted = 0
  let session: ActivityEvent[] = []
  while (emitted < o.events) {
    const g = pickGuild(rand())
    // Member 0 is the most active; members of guild g are a contiguous run of the user pool.
    const member = Math.floor(rand() ** 2.5 * members[g])
    const n = g === 0 ? member : (g * 7919 + member) % userCount
    const guildId = guildIds[g]
    const userId = userIds[n]
    const guildChannels = channels[g]
    const channelId = guildChannels[Math.floor(rand() * rand() * guildChannels.length)]
    const hour = rand() < 0.6 ? 17 + Math.floor(rand() * 7) : Math.floor(rand() * 24)
    let day = Math.floor(rand() * days)
    // Shifting members: most sessions of the last week, or none of it.
    if (kind[n] === SHIFT_UP && rand() < 0.7) day = Math.max(0, days - 7) + Math.floor(rand() * Math.min(7, days))
    if (kind[n] === SHIFT_DOWN && day >= days - 7 && rand() < 0.9) day = Math.floor(rand() * Math.max(1, days - 7))
    let at = start + day * DAY + hour * 3_600_000 + Math.floor(rand() * 3_600_000)
    // A newcomer acts only after joining: the session is moved into the time after the join.
    if (joinAt[n] > start) at = joinAt[n] + 60_000 + Math.floor((at - start) * (end - joinAt[n] - 60_000) / (end - start))
    session = []
    const add = (e: Omit<ActivityEvent, 'guildId' | 'userId' | 'username' | 'createdAt'>, when = at) => {
      if (when < end) session.push({ ...e, guildId, userId, username: when >= renamedAt[n] ? `${usernames[n]}_` : usernames[n], createdAt: iso(when) } as ActivityEvent)
    }
    const pair = g * userCount + n
    if (joinAt[n] > start && !joined.has(pair)) {
      joined.add(pair)
      add({ type: 'join' }, joinAt[n])
    }
    // A session starts with the member coming online on their devices.
    const r = rand()
    add({ type: 'presence', status: r < 0.8 ? 'online' : r < 0.9 ? 'idle' : 'dnd', clients: clientsAt(n, at) })
    at += (5 + Math.floor(rand() * 30)) * SECOND
    if (kind[n] === LURKER) {
      // Lurkers only come and go.
      const more = Math.floor(rand() * 3)
      for (let i = 0; i < more; i++) {
        at += (600 + Math.floor(rand() * 3600)) * SECOND
        add({ type: 'presence', status: rand() < 0.7 ? 'online' : 'idle', clients: clientsAt(n, at) })
      }
    } else {
      const tries = 1 + Math.floor(-Math.log(1 - rand()) * 3)
      for (let i = 0; i < tries; i++) {
        const typings = 1 + Math.floor(-Math.log(1 - rand()) * 1.2)
        const posts = rand() < postRate[n]
        for (let k = 0; k <= typings; k++) {
          const type = k < typings ? 'typing' : posts ? 'message' : null
          if (type) add({ type, channelId })
          if (type === 'message' && deleter[n] && rand() < 0.4) add({ type: 'message_delete', channelId }, at + (2 + Math.floor(rand() * 60)) * SECOND)
          at += (3 + Math.floor(rand() * 9)) * SECOND
        }
        at += (10 + Math.floor(rand() * 240)) * SECOND
      }
      // Reactions to others' messages: fast reactors within 3 s, others seconds to minutes later.
      if (rand() < 0.5) {
        const reactions = 1 + Math.floor(rand() * 3)
        for (let i = 0; i < reactions; i++) {
          const latencyMs = fastReactor[n] ? 150 + Math.floor(rand() * 2700) : 3000 + Math.floor(rand() * rand() * 600_000)
          add(rand() < 0.15 ? { type: 'reaction', channelId } : { type: 'reaction', channelId, latencyMs })
          at += (2 + Math.floor(rand() * 20)) * SECOND
        }
      }
    }
    if (rand() < (churner[n] ? 0.4 : 0.01)) {
      add({ type: 'role_change', roleId: roles[Math.floor(rand() * roles.length)], change: rand() < 0.55 ? 'added' : 'removed' })
      at += SECOND
    }
    if (rand() < 0.05) add({ type: 'presence', status: 'offline', clients: [] }, at + 60 * SECOND)
    // Now and then a member leaves and comes back.
    if (rand() < 0.004) {
      add({ type: 'leave' }, at + 120 * SECOND)
      add({ type: 'join' }, at + 3_600_000)
    }
    for (const e of session) {
      if (emitted >= o.events) break
      e.id = `${idPrefix}${emitted.toString(36)}`
      emitted++
      yield e
    }
  }
}

const roles = ['730000000000000001', '730000000000000002', '730000000000000003', '730000000000000004']
