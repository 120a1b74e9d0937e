import type { ColumnType, Generated } from 'kysely'

export type GeometryType = 'Point' | 'LineString' | 'Polygon'
export interface KeyValue { key: string; value: string }

export interface PlacemarkTable {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string[]
  geometry_type: GeometryType
  geometry: string
  coordinates_raw: string | null
  media_links: string[]
  extended_data: ColumnType<KeyValue[], string, string>
  // Bounding box of the geometry in the core `box` type, GiST-indexed for bbox queries.
  bbox: string
  event_date: string | null
  event_timestamp: Date | null
  event_sort: Date | null
  time_begin: Date | null
  time_end: Date | null
  // The KML time element as written (migration 022): `{when}` for a TimeStamp, `{begin?, end?}` for a TimeSpan.
  kml_time: ColumnType<Record<string, string> | null, string | null, string | null>
  created_at: ColumnType<Date, Date | string, never>
  // The summary as the API serializes it, the bounds' corners as exact float8, and the geometry's
  // positions packed for the box query's exact test (null for a point): migration 015.
  summary: string
  min_lon: number
  min_lat: number
  max_lon: number
  max_lat: number
  shape: number[] | null
}

export interface StyleTable {
  id: string
  kind: 'Style' | 'StyleMap'
  definition: ColumnType<Record<string, string>, string, string>
}

// The dataset's images (migration 023): a KMZ's icons at their paths in the archive.
export interface DatasetIconTable {
  name: string
  content_type: string
  data: Buffer
}

export interface FolderTable {
  id: number
  name: string
  path: string[]
}

export interface DatasetTable {
  id: ColumnType<number, 1, never>
  version: ColumnType<string, number | string | bigint, number | string | bigint>
  source: string | null
  timezone: string
  imported_at: ColumnType<Date, Date | string, Date | string>
  summary: ColumnType<Record<string, unknown>, string, string>
}

export interface UserTable {
  id: Generated<string>
  provider_id: string
  username: string
  discriminator: string
  avatar: string | null
  role: ColumnType<'USER' | 'ADMIN', 'USER' | 'ADMIN' | undefined, 'USER' | 'ADMIN'>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface UserGuildTable {
  user_id: string
  guild_id: string
  name: string
  icon: string | null
  owner: boolean
  permissions: string
}

export interface SessionTable {
  id: string
  user_id: string
  created_at: Generated<Date>
  last_used_at: Generated<Date>
  expires_at: Date
  revoked_at: Date | null
  revoked_reason: string | null
  user_agent: string | null
  ip: string | null
}

export interface RefreshTokenTable {
  token_hash: string
  session_id: string
  created_at: Generated<Date>
  expires_at: Date
  rotated_at: Date | null
}

export type ActivityType = 'message' | 'typing' | 'message_delete' | 'reaction' | 'presence' | 'role_change' | 'join' | 'leave'

export interface ActivityEventTable {
  guild_id: string
  channel_id: string | null
  user_id: string
  username: string
  type: ActivityType
  created_at: ColumnType<Date, Date | string, Date | string>
  // The sender's id, unique per guild when given.
  event_id: string | null
  latency_ms: number | null
  status: 'online' | 'idle' | 'dnd' | 'offline' | null
  clients: string[] | null
  role_id: string | null
  change: 'added' | 'removed' | null
  // Storage order.
  seq: ColumnType<string, never, never>
}

// Rollup per guild, UTC day and user, maintained by every activity load.
export interface ActivityDailyTable {
  guild_id: string
  day: string
  user_id: string
  typing_count: number
  message_count: number
  event_count: number
  presence_count: number
  multi_presence_count: number
  reaction_count: number
  timed_reaction_count: number
  fast_reaction_count: number
  delete_count: number
  role_added_count: number
  role_removed_count: number
  // Clients of the day's presence events: desktop 1, web 2, mobile 4.
  client_mask: number
  last_presence_at: Date | null
  // The quarter hours of the UTC day with an event of the member: 96 bits, 00:00-00:15 leftmost.
  quarter_mask: string
}

// A member's first presence listing each client.
export interface ActivityMemberClientTable {
  guild_id: string
  user_id: string
  client: string
  first_seen_at: Date
}

// Message and typing events per channel and quarter hour (UTC-aligned).
export interface ActivityChannelQuarterTable {
  guild_id: string
  quarter: Date
  channel_id: string
  message_count: number
  typing_count: number
  reaction_count: number
}

// Per guild, all time: its events, members and latest event.
export interface ActivityGuildTable {
  guild_id: string
  // bigint: read as a string.
  event_count: string
  member_count: number
  last_event_at: Date
}

// Events of each type per guild and quarter hour (UTC-aligned).
export interface ActivityGuildQuarterTable {
  guild_id: string
  quarter: Date
  message_count: number
  typing_count: number
  delete_count: number
  reaction_count: number
  presence_count: number
  role_change_count: number
  join_count: number
  leave_count: number
}

// Per guild, UTC day and quarter hour: the members whose first and last event of the day fall in it, and the
// difference array of members spanning midnight (migration 024).
export interface ActivityDayEdgeTable {
  guild_id: string
  day: Date
  quarter: number
  first_count: number
  last_count: number
  straddle_count: number
}

// Per guild member: all-time counts and the username of their latest event.
export interface ActivityUserTable {
  guild_id: string
  user_id: string
  username: string
  last_seen_at: ColumnType<Date, Date | string, Date | string>
  first_seen_at: ColumnType<Date, Date | string, Date | string>
  first_presence_at: Date | null
  typing_count: number
  message_count: number
}

export interface ApiKeyTable {
  id: Generated<string>
  name: string
  // SHA-256 of the key, hex.
  key_hash: string
  // The key's first characters, to tell keys apart in a listing.
  prefix: string
  guild_ids: string[]
  created_at: Generated<Date>
  last_used_at: Date | null
  revoked_at: Date | null
}

export interface ChangeLogTable {
  id: Generated<string>
  kind: string
  key: string
  at: Generated<Date>
}

export interface AuditTable {
  id: Generated<string>
  at: Generated<Date>
  type: string
  user_id: string | null
  actor_id: string | null
  data: ColumnType<Record<string, unknown>, string | undefined, string>
}

/** The tiles' low zooms counted by cell, kind, colour and last zoom, per dataset version (db/tile-cells.ts, migration 026). */
export interface TileCellTable {
  z: number
  x: number
  y: number
  cx: number
  cy: number
  point: boolean
  color: string
  last_zoom: number
  n: number
  sum_x: number
  sum_y: number
  id: number
}

export interface Database {
  users: UserTable
  user_guilds: UserGuildTable
  sessions: SessionTable
  refresh_tokens: RefreshTokenTable
  placemarks: PlacemarkTable
  styles: StyleTable
  folders: FolderTable
  dataset_icons: DatasetIconTable
  tile_cells: TileCellTable
  dataset: DatasetTable
  activity_events: ActivityEventTable
  activity_daily: ActivityDailyTable
  activity_users: ActivityUserTable
  change_log: ChangeLogTable
  audit: AuditTable
  api_keys: ApiKeyTable
  activity_member_clients: ActivityMemberClientTable
  activity_channel_quarters: ActivityChannelQuarterTable
  activity_guilds: ActivityGuildTable
  activity_guild_quarters: ActivityGuildQuarterTable
  activity_day_edges: ActivityDayEdgeTable
}

export type { Generated }
