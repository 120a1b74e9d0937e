export type ActivityType = 'typing' | 'message'

// One typing or message event of a guild member; createdAt is an ISO 8601 UTC instant.
export interface ActivityEvent {
  type: ActivityType
  guildId: string
  channelId: string
  userId: string
  username: string
  createdAt: string
}
