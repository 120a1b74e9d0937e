import { Type } from '@sinclair/typebox'
import { Nullable } from './common.ts'

export const User = Type.Object({
  id: Type.String({ format: 'uuid', description: 'Internal user id' }),
  providerId: Type.String({ description: 'User id at the identity provider', examples: ['100000000000000001'] }),
  username: Type.String({ examples: ['ada'] }),
  discriminator: Type.String({ examples: ['0001'] }),
  avatar: Nullable(Type.String()),
  role: Type.Union([Type.Literal('USER'), Type.Literal('ADMIN')]),
  createdAt: Type.String({ format: 'date-time' })
}, { title: 'User' })

export const Guild = Type.Object({
  id: Type.String(),
  name: Type.String(),
  icon: Nullable(Type.String()),
  owner: Type.Boolean(),
  permissions: Type.String({ description: 'Decimal permission bit set, as the identity provider sent it' })
}, { title: 'Guild' })

export const Me = Type.Composite([User, Type.Object({ guilds: Type.Array(Guild) })], { title: 'Me' })

export const SignInResponse = Type.Object({
  accessToken: Type.String({ description: 'JWT (HS256), valid for JWT_ACCESS_EXPIRES_IN' }),
  refreshToken: Type.String({ description: 'JWT (HS256), single use, valid for JWT_REFRESH_EXPIRES_IN; also set as an httpOnly cookie' }),
  user: User
})

export const TokenPair = Type.Object({ accessToken: Type.String(), refreshToken: Type.String() })

export const IdentityQuery = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 2048, description: 'Authorization code from the identity provider' }),
  state: Type.Optional(Type.String({ maxLength: 256, description: 'The state returned by the provider; checked against the state cookie set by /api/auth/identity/login' }))
})

export const RefreshBody = Type.Object({
  refreshToken: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Omit to use the refresh_token cookie' }))
})

export const Session = Type.Object({
  id: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.String({ format: 'date-time', description: 'Last sign-in or refresh' }),
  expiresAt: Type.String({ format: 'date-time' }),
  userAgent: Nullable(Type.String()),
  ip: Nullable(Type.String()),
  current: Type.Boolean({ description: 'True for the session of the token making this request' })
}, { title: 'Session' })

export const SessionsResponse = Type.Object({ sessions: Type.Array(Session) })
export const SessionParams = Type.Object({ id: Type.String({ description: 'Session id (any other value answers 404)' }) })
