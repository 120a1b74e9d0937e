import type { Kysely, Transaction } from 'kysely'
import { isTransactionConflict } from '../lib/errors.ts'

/** Attempts of a transaction that keeps losing to others (deadlock or serialization failure). */
export const TRANSACTION_ATTEMPTS = 4

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Runs `work` in a transaction, again from the start when PostgreSQL chose it as a deadlock's victim or
 * refused it as not serializable, up to TRANSACTION_ATTEMPTS times in all, with a short random pause so
 * that two retried rivals do not meet again. `work` must only touch the database: it may run more than
 * once. The last failure is thrown as it came, and the error handler answers it 503.
 */
export async function inTransaction<DB, T> (db: Kysely<DB>, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work)
    } catch (err) {
      if (attempt >= TRANSACTION_ATTEMPTS || !isTransactionConflict(err)) throw err
      await pause(Math.random() * 10 * attempt)
    }
  }
}
