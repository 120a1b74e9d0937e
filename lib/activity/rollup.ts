import type { ActivityEvent } from './event.ts'
import { parseInstant } from './instant.ts'

export interface DayCell { guildId: string; userId: string; day: string; t: number; m: number }
export interface Member { guildId: string; userId: string; username: string; lastAt: string; t: number; m: number }

// Per-load aggregation in memory; consecutive events of one member (a session) skip the map lookups.
export class Rollup {
  cells = new Map<string, DayCell>()
  members = new Map<string, Member>()
  readonly guilds = new Set<string>()
  readonly users = new Set<string>()
  readonly days = new Set<string>()
  private lastCell: DayCell | null = null
  private lastMember: Member | null = null

  add (e: ActivityEvent, at: string): void {
    let cell = this.lastCell
    if (cell === null || cell.userId !== e.userId || cell.guildId !== e.guildId || !at.startsWith(cell.day)) {
      const day = at.slice(0, 10)
      const key = `${e.guildId}\u0000${e.userId}\u0000${day}`
      cell = this.cells.get(key) ?? null
      if (cell === null) {
        cell = { guildId: e.guildId, userId: e.userId, day, t: 0, m: 0 }
        this.cells.set(key, cell)
        this.guilds.add(e.guildId)
        this.users.add(e.userId)
        this.days.add(day)
      }
      this.lastCell = cell
    }
    let member = this.lastMember
    if (member === null || member.userId !== e.userId || member.guildId !== e.guildId) {
      const key = `${e.guildId}\u0000${e.userId}`
      member = this.members.get(key) ?? null
      if (member === null) {
        member = { guildId: e.guildId, userId: e.userId, username: e.username, lastAt: at, t: 0, m: 0 }
        this.members.set(key, member)
      }
      this.lastMember = member
    }
    if (e.type === 'typing') {
      cell.t++
      member.t++
    } else {
      cell.m++
      member.m++
    }
    // Canonical ISO strings compare like the instants; on a tie the later event wins.
    if (at >= member.lastAt) {
      member.lastAt = at
      member.username = e.username
    }
  }

  clear (): void {
    this.cells = new Map()
    this.members = new Map()
    this.lastCell = null
    this.lastMember = null
  }
}

// toISOString()'s shape (YYYY-MM-DDTHH:MM:SS.sssZ), checked by its separators; PostgreSQL checks the digits.
const isCanonical = (s: string) => s.length === 24 && s.charCodeAt(23) === 90 && s.charCodeAt(10) === 84 &&
  s.charCodeAt(19) === 46 && s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 && s.charCodeAt(13) === 58 && s.charCodeAt(16) === 58

// The loader's form of createdAt: strings then sort like the instants and slice to their UTC day.
export function canonicalInstant (createdAt: string): string {
  if (isCanonical(createdAt)) return createdAt
  const ms = typeof createdAt === 'string' ? parseInstant(createdAt, { requireZone: true, allowDateOnly: false }) : null
  if (ms === null) throw new Error(`invalid createdAt: ${JSON.stringify(createdAt)}`)
  return new Date(ms).toISOString()
}
