export type Role = 'USER' | 'ADMIN'

// What a verified access token tells a route about its caller.
export interface AuthContext {
  userId: string
  providerId: string
  username: string
  role: Role
  sessionId: string
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null
  }
}
