import { until } from './shared-state.ts'

/** A source that stops after its first part until released: an import held half way. */
export function heldSource (first: string, rest: string) {
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let reached!: () => void
  const waiting = new Promise<void>((resolve) => { reached = resolve })
  async function * chunks (): AsyncGenerator<string> {
    yield first
    reached()
    await released
    yield rest
  }
  return { chunks: chunks(), waiting, release }
}

/** Polls until check holds; throws after ms. */
export async function waitUntil (check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  if (await until(check, ms) < 0) throw new Error('timed out waiting')
}
