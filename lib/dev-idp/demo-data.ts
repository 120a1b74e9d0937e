// Fixed people and guilds of the development identity provider, shared with the activity seed so
// that /api/ghosts answers for the demo guild right after `npm start`.
export const DEMO_GUILD_ID = '700000000000000001'
export const OTHER_GUILD_ID = '700000000000000002'

// Discord-style permission bits.
export const ADMINISTRATOR = 0x8n
export const MANAGE_GUILD = 0x20n

export interface DemoGuild { id: string; name: string; icon: string | null; owner: boolean; permissions: string }
export interface DemoUser { id: string; username: string; discriminator: string; avatar: string; note: string; guilds: DemoGuild[] }

const demoGuild = (owner: boolean, permissions: bigint): DemoGuild => ({ id: DEMO_GUILD_ID, name: 'Demo Guild', icon: null, owner, permissions: permissions.toString() })
const otherGuild: DemoGuild = { id: OTHER_GUILD_ID, name: 'Quiet Corner', icon: null, owner: false, permissions: '0' }

export const DEMO_USERS: DemoUser[] = [
  { id: '100000000000000001', username: 'ada', discriminator: '0001', avatar: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', note: 'owner of Demo Guild', guilds: [demoGuild(true, 0n), otherGuild] },
  { id: '100000000000000002', username: 'grace', discriminator: '0002', avatar: 'b1b2c3d4e5f60718293a4b5c6d7e8f90', note: 'has Manage Server in Demo Guild', guilds: [demoGuild(false, MANAGE_GUILD | 0x400n)] },
  { id: '100000000000000003', username: 'linus', discriminator: '0003', avatar: 'c1b2c3d4e5f60718293a4b5c6d7e8f90', note: 'plain member of Demo Guild (ghosts answers 403)', guilds: [demoGuild(false, 0x400n | 0x800n)] }
]
