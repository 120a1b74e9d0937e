import type { TSchema } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { Nullable, ref } from './common.ts'

// The examples are the development identity provider's demo user `ada` (lib/dev-idp/demo-data.ts).
const jwt = (description: string) => Type.String({ description, examples: ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIwZjVjOTRmNi0xYjM5LTRiNGQtOWE3NC0zYjIwNDkxYjQyYjAifQ.c2lnbmF0dXJl'] })

// One of a few strings, as a JSON Schema `enum` (one clear validation message, unlike a union of literals).
const oneOf = <T extends string>(values: readonly T[], options: Record<string, unknown>) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options }) as TSchema & { static: T }

// Shared shapes ($id): registered once (schemas/components.ts), referred to with ref().
export const User = Type.Object({
  id: Type.String({ format: 'uuid', description: 'Internal user id', examples: ['0f5c94f6-1b39-4b4d-9a74-3b20491b42b0'] }),
  providerId: Type.String({ description: 'User id at the identity provider', examples: ['100000000000000001'] }),
  username: Type.String({ description: 'Username at the identity provider', examples: ['ada'] }),
  discriminator: Type.String({ description: 'Discriminator at the identity provider', examples: ['0001'] }),
  avatar: Nullable(Type.String({ description: 'Avatar hash at the identity provider; null without one', examples: ['a1b2c3d4e5f60718293a4b5c6d7e8f90'] })),
  role: Type.Union([Type.Literal('USER'), Type.Literal('ADMIN')], { description: '`ADMIN` may read the analytics of every guild', examples: ['USER'] }),
  createdAt: Type.String({ format: 'date-time', description: 'First sign-in', examples: ['2026-01-15T09:30:00.000Z'] })
}, { $id: 'User', title: 'User', description: 'A user, as stored at sign-in' })

export const Guild = Type.Object({
  id: Type.String({ description: 'Guild id at the identity provider', examples: ['700000000000000001'] }),
  name: Type.String({ description: 'Guild name', examples: ['Demo Guild'] }),
  icon: Nullable(Type.String({ description: 'Icon hash; null without one', examples: ['f00dfeedf00dfeedf00dfeedf00dfeed'] })),
  owner: Type.Boolean({ description: 'The user owns the guild', examples: [true] }),
  permissions: Type.String({ description: 'Decimal permission bit set, as the identity provider sent it', examples: ['32'] })
}, { $id: 'Guild', title: 'Guild', description: 'A guild of the user\'s guild list, as the identity provider sent it at sign-in' })

export const Me = Type.Composite([User, Type.Object({ guilds: Type.Array(ref(Guild), { description: 'The guild list stored at the latest sign-in' }) })], {
  $id: 'UserWithGuilds',
  title: 'UserWithGuilds',
  description: 'The user with the guild list stored at their latest sign-in'
})

export const SignInResponse = Type.Object({
  accessToken: jwt('JWT (HS256), valid for JWT_ACCESS_EXPIRES_IN; send it as `Authorization: Bearer <accessToken>`'),
  refreshToken: jwt('JWT (HS256), single use, valid for JWT_REFRESH_EXPIRES_IN; also set as an httpOnly cookie'),
  user: ref(User)
}, { title: 'SignIn' })

export const TokenPair = Type.Object({
  accessToken: jwt('A new access token'),
  refreshToken: jwt('A new refresh token; the one sent is spent')
}, { title: 'TokenPair' })

export const IdentityQuery = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 2048, description: 'Authorization code from the identity provider (single use, short-lived)', examples: ['NhhvTDYsFcdgNLnnLijcl7Ku7bEEeee'] }),
  state: Type.Optional(Type.String({ maxLength: 256, description: 'The state returned by the provider; checked against the state cookie set by /api/auth/identity/login', examples: ['9b2f6d1e-4c1a-4f7e-8f53-3f0d7c2a9e61'] }))
})

export const RefreshBody = Type.Object({
  refreshToken: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'The refresh token to rotate; omit it to use the refresh_token cookie', examples: ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIwZjVjOTRmNi0xYjM5LTRiNGQtOWE3NC0zYjIwNDkxYjQyYjAifQ.c2lnbmF0dXJl'] }))
}, { title: 'RefreshRequest' })

export const Session = Type.Object({
  id: Type.String({ format: 'uuid', description: 'Session id', examples: ['5d1f3a0e-8c2b-4e7a-9f10-2b6c4d8e0a13'] }),
  createdAt: Type.String({ format: 'date-time', description: 'Sign-in that opened it', examples: ['2026-01-15T09:30:00.000Z'] }),
  lastUsedAt: Type.String({ format: 'date-time', description: 'Last sign-in or refresh', examples: ['2026-01-15T10:05:00.000Z'] }),
  expiresAt: Type.String({ format: 'date-time', description: 'When its refresh token expires unless rotated', examples: ['2026-01-22T10:05:00.000Z'] }),
  userAgent: Nullable(Type.String({ description: 'User-Agent of the sign-in (first 512 characters); null without one', examples: ['Mozilla/5.0 (X11; Linux x86_64)'] })),
  ip: Nullable(Type.String({ description: 'Client IP of the sign-in', examples: ['203.0.113.7'] })),
  current: Type.Boolean({ description: 'True for the session of the token making this request', examples: [true] })
}, { $id: 'Session', title: 'Session', description: 'A sign-in session: one refresh token chain' })

export const SessionsResponse = Type.Object({
  sessions: Type.Array(ref(Session), { description: 'Live sessions, newest first' })
}, { title: 'SessionList' })

export const SessionParams = Type.Object({
  // The router refuses a longer path parameter (414) before validation: the bound only documents it.
  id: Type.String({ maxLength: 100, description: 'Session id, as listed by GET /api/auth/sessions (any other value answers 404)', examples: ['5d1f3a0e-8c2b-4e7a-9f10-2b6c4d8e0a13'] })
})

export const SignOutQuery = Type.Object({
  scope: Type.Optional(oneOf(['all', 'others'] as const, { description: '`all` (default): every session of the caller, this one included; `others`: every one but this', examples: ['others'] }))
}, { additionalProperties: false })

const eventTypes = ['signin', 'refresh_replay', 'refresh_reuse', 'session_revoked', 'role_changed', 'signout_all', 'account_deleted'] as const

export const HistoryEvent = Type.Object({
  type: oneOf(eventTypes, { description: 'What happened', examples: ['signin'] }),
  createdAt: Type.String({ format: 'date-time', description: 'When', examples: ['2026-01-15T09:30:00.000Z'] }),
  ip: Type.Optional(Nullable(Type.String({ description: '`signin`: the client address', examples: ['203.0.113.7'] }))),
  userAgent: Type.Optional(Nullable(Type.String({ description: '`signin`: the User-Agent (first 512 characters)', examples: ['Mozilla/5.0 (X11; Linux x86_64)'] }))),
  newIp: Type.Optional(Type.Boolean({ description: '`signin`: the first sign-in of this user from this address (within the history\'s retention)', examples: [true] })),
  sessionId: Type.Optional(Type.String({ description: '`signin`, `refresh_replay`, `refresh_reuse`, `session_revoked`: the session', examples: ['5d1f3a0e-8c2b-4e7a-9f10-2b6c4d8e0a13'] })),
  by: Type.Optional(Type.String({ description: '`session_revoked`: `self`, `admin`, `reuse` or `signout_all`; `role_changed`: `admin` or `cli`; `signout_all`: `admin` when an admin did it', examples: ['self'] })),
  from: Type.Optional(Type.String({ description: '`role_changed`: the role before', examples: ['USER'] })),
  to: Type.Optional(Type.String({ description: '`role_changed`: the role after', examples: ['ADMIN'] })),
  scope: Type.Optional(Type.String({ description: '`signout_all`: `all` or `others`', examples: ['others'] })),
  sessions: Type.Optional(Type.Integer({ description: '`signout_all`: how many sessions it ended', examples: [2] })),
  userId: Type.Optional(Nullable(Type.String({ description: 'Admin audit only: the user the event is about (null for `account_deleted`)', examples: ['0f5c94f6-1b39-4b4d-9a74-3b20491b42b0'] }))),
  adminId: Type.Optional(Nullable(Type.String({ description: 'Admin audit only: the admin who acted, null otherwise', examples: [null] })))
}, { $id: 'SecurityEvent', title: 'SecurityEvent', description: 'One event of the security history. Never a token, code or secret.' })

export const HistoryQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Events per page, 1..1000 (default 100)', examples: [20] }),
  // No example: only the server makes a cursor (sealed, bound to the query), so any written here would be refused.
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: '`nextCursor` of the previous page (opaque, sealed; good only for the same caller, filters and limit)' }))
}, { additionalProperties: false })

export const HistoryResponse = Type.Object({
  events: Type.Array(ref(HistoryEvent), { description: 'Newest first' }),
  nextCursor: Nullable(Type.String({ description: 'The next page\'s cursor (opaque, sealed); null on the last page', examples: ['fkYDB_HbKPUr4WaKVSZC3DA9weWGXfzlAreqzwvDbiVMYLRkRyUYgbexsTE4RA'] }))
}, { title: 'SecurityHistory' })

export const AccountExport = Type.Object({
  user: ref(User),
  guilds: Type.Array(ref(Guild), { description: 'The guild list stored at the latest sign-in' }),
  sessions: Type.Array(Type.Object({
    id: Type.String({ format: 'uuid' }),
    createdAt: Type.String({ format: 'date-time' }),
    lastUsedAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({ format: 'date-time' }),
    revokedAt: Nullable(Type.String({ format: 'date-time' })),
    revokedReason: Nullable(Type.String()),
    userAgent: Nullable(Type.String()),
    ip: Nullable(Type.String())
  }), { description: 'Every stored session, live or ended (until SESSION_RETENTION), newest first; no token material' }),
  history: Type.Array(ref(HistoryEvent), { description: 'The whole security history, newest first' }),
  exportedAt: Type.String({ format: 'date-time' })
}, { title: 'AccountExport', description: 'Everything stored about the caller' })

export const AdminUsersQuery = Type.Object({
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Part of a username or provider id, any case', examples: ['ada'] })),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Users per page, 1..1000 (default 50)', examples: [50] }),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0, description: 'Users to skip', examples: [0] })
}, { additionalProperties: false })

export const AdminUsersResponse = Type.Object({
  users: Type.Array(ref(User), { description: 'By username, then id' }),
  limit: Type.Integer({ examples: [50] }),
  offset: Type.Integer({ examples: [0] })
}, { title: 'AdminUserList' })

export const AdminUserParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'Internal user id (any other value answers 404)', examples: ['0f5c94f6-1b39-4b4d-9a74-3b20491b42b0'] })
})

export const AdminUser = Type.Object({
  user: ref(Me),
  sessions: Type.Array(Type.Object({
    id: Type.String({ format: 'uuid' }),
    createdAt: Type.String({ format: 'date-time' }),
    lastUsedAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({ format: 'date-time' }),
    userAgent: Nullable(Type.String()),
    ip: Nullable(Type.String())
  }), { description: 'Live sessions, newest first' })
}, { title: 'AdminUser' })

export const RoleBody = Type.Object({
  role: oneOf(['USER', 'ADMIN'] as const, { description: 'The new role', examples: ['ADMIN'] })
}, { additionalProperties: false })

export const AdminAuditQuery = Type.Object({
  userId: Type.Optional(Type.String({ format: 'uuid', description: 'Only events about this user', examples: ['0f5c94f6-1b39-4b4d-9a74-3b20491b42b0'] })),
  type: Type.Optional(oneOf(eventTypes, { description: 'Only events of this type', examples: ['role_changed'] })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Only events at or after this instant', examples: ['2026-01-01T00:00:00Z'] })),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Events per page, 1..1000 (default 100)', examples: [20] }),
  // No example: only the server makes a cursor (sealed, bound to the query), so any written here would be refused.
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: '`nextCursor` of the previous page (opaque, sealed; good only for the same caller, filters and limit)' }))
}, { additionalProperties: false })
