import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import type { Box } from '../../lib/geo/box.ts'
import { joinedSummaries, type BoxIndex, type SummaryBytes } from '../../lib/geo/box-index.ts'
import { boxAnswer } from '../../db/placemarks.ts'
import { loadBoxIndex } from '../../db/box-index-load.ts'
import type { Database } from '../../db/types.ts'

declare module 'fastify' {
  interface FastifyInstance {
    boxIndex: {
      /** Serialized summaries from memory, or null while no index of the current dataset is loaded. */
      search(box: Box, limit: number): SummaryBytes | null
      /** The placemarks intersecting the box, from memory when the index is loaded, else from the database: the same bytes either way. */
      query(box: Box, limit: number): Promise<SummaryBytes>
      /** The loaded index of the current dataset, or null (the tiles read its point grid and entries). */
      index(): BoxIndex | null
      /** Resolves when no load is running (tests, benchmarks). */
      idle(): Promise<void>
      /** The loaded index's dataset version and size, if any. */
      loaded(): { version: number; placemarks: number; bytes: number } | null
      /**
       * off (BBOX_INDEX_MB=0), loading (this process's first load is running or starts once the server listens), ready (the current
       * dataset's index is loaded), reloading (a new dataset's index is loading), too-big (past
       * BBOX_INDEX_MB), failed (the last load failed and is retried). In every state but ready box
       * queries read the database; none of them holds up readiness.
       */
      state(): BoxIndexState
      /**
       * Runs fn on each loaded index before it is put to use (box queries read the database meanwhile,
       * and the state stays loading or reloading); a failure is logged and the index used all the same.
       */
      beforeUse(fn: (index: BoxIndex) => Promise<void>): void
    }
  }
}

const RETRY_MS = 5000
const FIRST_LOAD_AFTER_LISTEN_MS = 500

export type BoxIndexState = 'off' | 'loading' | 'ready' | 'reloading' | 'too-big' | 'failed'

/**
 * Box queries from memory: the placemark dataset changes only by import, so every instance keeps a
 * static R-tree of placemark bounds with each summary's serialized bytes, reloaded in the background
 * when the dataset version changes. Until it is loaded, or when it would pass BBOX_INDEX_MB (0 turns
 * it off; the size is estimated from a sample before loading), box queries read the database; both
 * give the same answers. The instance is ready without it.
 */
export default fp(async function boxIndexPlugin (app: FastifyInstance) {
  const maxBytes = app.config.BBOX_INDEX_MB * 1024 * 1024
  let current: { version: number; index: BoxIndex } | null = null
  let loading: Promise<void> | null = null
  let again = false
  let closing = false
  let tooBig = -1
  let retry: NodeJS.Timeout | undefined
  // Whether a load has ended in this process (loaded, too big or failed), and whether the last one failed.
  let settled = false
  let failed = false
  const beforeUse: ((index: BoxIndex) => Promise<void>)[] = []

  const load = async (version: number) => {
    if (version === tooBig || current?.version === version) return
    const started = performance.now()
    let needed = 0
    const index = await loadBoxIndex(app.db, {
      maxBytes,
      workerUrl: app.dbHandle.url,
      workerFrom: app.config.BBOX_INDEX_WORKER_MIN,
      stop: () => closing || app.datasetVersion.current() !== version,
      tooBig: (bytes) => { needed = bytes }
    })
    if (closing || app.datasetVersion.current() !== version) return
    if (!index) {
      tooBig = version
      current = null
      const mb = Math.ceil(needed / 1048576)
      app.log.warn({ neededMb: mb, maxMb: app.config.BBOX_INDEX_MB },
        `the placemark box index needs about ${mb} MB, past BBOX_INDEX_MB=${app.config.BBOX_INDEX_MB}: box queries read the database (BBOX_INDEX_MB=${mb} or more keeps it in memory)`)
      return
    }
    // Pages were separate queries: an import committed meanwhile bumped the version, and the new
    // version's listener loads again.
    if ((await app.datasetVersion.refresh()) !== version) return
    const ready = performance.now()
    for (const fn of beforeUse) {
      await fn(index).catch((err: unknown) => app.log.warn({ err }, 'preparing the placemark box index for use failed'))
    }
    if (closing || app.datasetVersion.current() !== version) return
    current = { version, index }
    app.log.info({ version, placemarks: index.size, mb: Math.round(index.memoryBytes / 1048576), ms: Math.round(performance.now() - started), preparedMs: Math.round(performance.now() - ready) }, 'placemark box index loaded')
  }

  const schedule = () => {
    if (maxBytes === 0 || closing) return
    // An index of an older dataset is never used again: its memory goes now, not once the next one is
    // loaded (two at once would double the footprint for the length of a load).
    if (current && current.version !== app.datasetVersion.current()) current = null
    if (loading) {
      again = true
      return
    }
    loading = (async () => {
      do {
        again = false
        try {
          await load(app.datasetVersion.current())
          failed = false
        } catch (err) {
          if (closing) return
          failed = true
          app.log.warn({ err }, `loading the placemark box index failed; retrying in ${RETRY_MS / 1000} s`)
          clearTimeout(retry)
          retry = setTimeout(schedule, RETRY_MS).unref()
        }
      // `again` and `closing` are set by other callers while this load awaits.
      // eslint-disable-next-line no-unmodified-loop-condition
      } while (again && !closing)
    })().finally(() => {
      loading = null
      settled = true
    })
  }

  const search = (box: Box, limit: number) => current && current.version === app.datasetVersion.current() ? current.index.search(box, limit) : null
  app.decorate('boxIndex', {
    search,
    index: () => (current && current.version === app.datasetVersion.current() ? current.index : null),
    query: async (box: Box, limit: number) => search(box, limit) ?? await placemarksInBox(app.db, box, limit),
    idle: async () => {
      start()
      // eslint-disable-next-line no-unmodified-loop-condition -- `loading` is replaced by the load it waits for
      while (loading) await loading
    },
    loaded: () => (current ? { version: current.version, placemarks: current.index.size, bytes: current.index.memoryBytes } : null),
    state (): BoxIndexState {
      if (maxBytes === 0) return 'off'
      const version = app.datasetVersion.current()
      if (current?.version === version) return 'ready'
      if (tooBig === version) return 'too-big'
      if (!settled) return 'loading'
      return failed && !loading ? 'failed' : 'reloading'
    },
    beforeUse: (fn: (index: BoxIndex) => Promise<void>) => { beforeUse.push(fn) }
  })
  app.datasetVersion.onChange(schedule)
  // The first load starts half a second after the server listens: its sample of the placemarks (read and
  // packed on this thread, some 50 ms) and its worker's start (loading modules, its queries) would
  // otherwise take the CPU from the server's start and its first answers, the readiness probe among them,
  // on a small machine. An app that never listens (the tests, through inject) starts it a second after
  // ready, or at once on idle().
  let started = false
  let fallback: NodeJS.Timeout | undefined
  const start = () => {
    if (started) return
    started = true
    clearTimeout(fallback)
    schedule()
  }
  app.addHook('onReady', async () => { fallback = setTimeout(start, 1000).unref() })
  app.addHook('onListen', async () => {
    clearTimeout(fallback)
    fallback = setTimeout(start, FIRST_LOAD_AFTER_LISTEN_MS).unref()
  })
  app.addHook('onClose', async () => {
    closing = true
    clearTimeout(fallback)
    clearTimeout(retry)
    // eslint-disable-next-line no-unmodified-loop-condition -- `loading` is replaced by the load it waits for
    while (loading) await loading
  })
}, { name: 'box-index', dependencies: ['config', 'db', 'dataset-cache'] })

/** The box query on the database (db/placemarks.ts boxAnswer): the stored summaries, joined there. */
export async function placemarksInBox (db: Kysely<Database>, box: Box, limit: number): Promise<SummaryBytes> {
  const { json, count } = await boxAnswer(db, box, limit)
  return joinedSummaries(json, count)
}
