import type { DatabaseHandle } from './index.ts'

/**
 * The NOTIFY channel on which an import announces, at its commit, the dataset version it made.
 * The payload is that version as text.
 */
export const DATASET_CHANNEL = 'dataset_changed'

/**
 * Calls onChange with each new dataset version as imports commit, or with null when notifications
 * may have been missed (the listening connection was lost) and the version must be read again.
 * Resolves to a function that stops listening.
 */
export function listenDatasetChanges (
  handle: DatabaseHandle,
  onChange: (version: number | null) => void,
  onError?: (err: unknown) => void
): Promise<() => Promise<void>> {
  return handle.listen(DATASET_CHANNEL, (payload) => onChange(parseVersion(payload)), onError)
}

function parseVersion (payload: string): number | null {
  const version = Number(payload)
  return payload !== '' && Number.isSafeInteger(version) ? version : null
}
