import type { PoolClient } from 'pg'
import { copyText, copyWriter } from '../db/copy-writer.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { DATASET_CHANNEL } from '../../db/dataset-changes.ts'
import { readKmlBatches, type KmlPlacemark } from '../kml/reader.ts'
import { parseNameDate } from '../timeline/name-date.ts'
import { boundsOf } from '../geo/box.ts'

export interface ImportOptions {
  timeZone: string
  source: string
  dryRun?: boolean
  onProgress?: (placemarks: number) => void
}

export interface ImportSummary {
  source: string
  timeZone: string
  dryRun: boolean
  placemarks: number
  geometryTypes: Record<string, number>
  styles: number
  styleKinds: { Style: number; StyleMap: number }
  folders: number
  skipped: Record<string, number>
  timelineEvents: number
  timestampedEvents: number
  version: number | null
  seconds: number
}

// Column order of the shadow table's COPY and of the batch insert.
const COLUMNS = ['id', 'name', 'description', 'style_id', 'folder_path', 'geometry_type', 'geometry', 'coordinates_raw',
  'media_links', 'extended_data', 'bbox', 'event_date', 'event_timestamp', 'event_sort', 'created_at'] as const

type Row = [number, string, string | null, string | null, string[], string, string, string, string[], string, string, string | null, string | null, string | null, string]

function toRow(id: number, p: KmlPlacemark, timeZone: string, createdAt: string): Row {
  const b = boundsOf(p.geometry)
  const when = parseNameDate(p.name, timeZone)
  return [
    id, p.name, p.description, p.styleId, p.folderPath, p.geometry.type, JSON.stringify(p.geometry), p.coordinatesRaw,
    p.mediaLinks, JSON.stringify(p.extendedData), `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`,
    when?.date ?? null, when?.timestamp ?? null, when?.sortKey ?? null, createdAt
  ]
}

const arrayLiteral = (items: string[]) => `{${items.map((s) => `"${s.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`

function copyLine(row: Row): string {
  let line = ''
  for (let i = 0; i < row.length; i++) {
    const v = row[i]
    const text = v === null ? '\\N' : Array.isArray(v) ? copyText(arrayLiteral(v)) : typeof v === 'number' ? String(v) : copyText(v)
    line += i === 0 ? text : `\t${text}`
  }
  return `${line}\n`
}

/** Where parsed items go: the database inside one transaction, or nowhere for a dry run. */
interface Sink {
  placemark(row: Row): Promise<void> | undefined
  style(id: string, kind: string, definition: Record<string, string>): Promise<void>
  folder(id: number, name: string, path: string[]): Promise<void>
  finish(summary: ImportSummary): Promise<number | null>
  abort(): Promise<void>
}

const nullSink: Sink = {
  placemark: () => undefined,
  style: async () => {},
  folder: async () => {},
  finish: async () => null,
  abort: async () => {}
}

// The dataset loads into a shadow table (COPY FREEZE: created in this transaction, so its rows go in
// frozen and all-visible, with no VACUUM needed for index-only scans); the other indexes are built once
// at the end, statistics gathered, and the tables swap.
// Readers keep using the old table until then, and the swap holds its lock only until the commit.
async function beginShadowImport(client: PoolClient): Promise<void> {
  await client.query('BEGIN')
  await client.query('DROP TABLE IF EXISTS placemarks_next')
  await client.query('CREATE TABLE placemarks_next (LIKE placemarks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
  // The GiST index is kept up during the load rather than built after it: the database has a core to
  // spare while the file is parsed, and a build at the end took about 6 s per million placemarks.
  await client.query('CREATE INDEX placemarks_next_bbox_idx ON placemarks_next USING gist (bbox) INCLUDE (id)')
  await client.query('DELETE FROM styles')
  await client.query('DELETE FROM folders')
}

async function commitShadowImport(client: PoolClient, summary: ImportSummary): Promise<number> {
  await client.query('ALTER TABLE placemarks_next ADD CONSTRAINT placemarks_next_pkey PRIMARY KEY (id)')
  await client.query('CREATE INDEX placemarks_next_folder_path_idx ON placemarks_next USING gin (folder_path)')
  await client.query('CREATE INDEX placemarks_next_timeline_idx ON placemarks_next (event_sort, id) WHERE event_sort IS NOT NULL')
  await client.query('DROP TABLE placemarks')
  await client.query('ALTER TABLE placemarks_next RENAME TO placemarks')
  await client.query('ALTER TABLE placemarks RENAME CONSTRAINT placemarks_next_pkey TO placemarks_pkey')
  for (const name of ['bbox', 'folder_path', 'timeline']) {
    await client.query(`ALTER INDEX placemarks_next_${name}_idx RENAME TO placemarks_${name}_idx`)
  }
  const { rows } = await client.query<{ version: string }>(
    `INSERT INTO dataset (id, version, source, timezone, imported_at, summary)
     VALUES (1, 1, $1, $2, now(), $3)
     ON CONFLICT (id) DO UPDATE SET version = dataset.version + 1, source = EXCLUDED.source,
       timezone = EXCLUDED.timezone, imported_at = EXCLUDED.imported_at, summary = EXCLUDED.summary
     RETURNING version`,
    [summary.source, summary.timeZone, JSON.stringify({ placemarks: summary.placemarks, skipped: summary.skipped })]
  )
  const version = Number(rows[0].version)
  // Delivered to every listening server at the commit, and never if the import rolls back.
  await client.query('SELECT pg_notify($1, $2)', [DATASET_CHANNEL, String(version)])
  await client.query('ANALYZE placemarks')
  await client.query('COMMIT')
  return version
}

async function databaseSink(handle: DatabaseHandle): Promise<Sink> {
  const client = await handle.pool.connect()
  let done = false
  const release = (err?: Error) => {
    if (done) return
    done = true
    client.release(err)
  }
  try {
    await beginShadowImport(client)
  } catch (err) {
    release(err as Error)
    throw err
  }
  // Styles and folders are few; they wait in memory so that nothing else shares the connection during a COPY.
  const styles: { id: string; kind: string; definition: string }[] = []
  const folders: { id: number; name: string; path: string[] }[] = []
  const writeStylesAndFolders = async () => {
    if (styles.length) {
      await client.query('INSERT INTO styles (id, kind, definition) SELECT * FROM json_to_recordset($1::json) AS s(id text, kind text, definition jsonb)', [JSON.stringify(styles)])
    }
    if (folders.length) {
      await client.query('INSERT INTO folders (id, name, path) SELECT * FROM json_to_recordset($1::json) AS f(id int, name text, path text[])', [JSON.stringify(folders)])
    }
  }
  const common = {
    style: async (id: string, kind: string, definition: Record<string, string>) => {
      styles.push({ id, kind, definition: JSON.stringify(definition) })
    },
    folder: async (id: number, name: string, path: string[]) => {
      folders.push({ id, name, path })
    },
    abort: async () => {
      try {
        await client.query('ROLLBACK')
        release()
      } catch (err) {
        release(err as Error)
      }
    }
  }

  if (handle.kind === 'postgres') {
    // PostgreSQL: one COPY stream, fed while parsing, so the server loads rows as the file is read.
    const copy = copyWriter(client, `COPY placemarks_next (${COLUMNS.join(', ')}) FROM STDIN WITH (FREEZE)`)
    return {
      ...common,
      placemark: (row) => copy.write(copyLine(row)),
      finish: async (summary) => {
        await copy.end()
        await writeStylesAndFolders()
        const version = await commitShadowImport(client, summary)
        release()
        return version
      },
      abort: async () => {
        copy.destroy()
        await common.abort()
      }
    }
  }

  // PGlite has no COPY from a client stream: batches go in as one JSON parameter each.
  let batch: Record<string, unknown>[] = []
  const insertBatch = async () => {
    if (!batch.length) return
    const json = JSON.stringify(batch)
    batch = []
    await client.query('INSERT INTO placemarks_next SELECT * FROM json_populate_recordset(NULL::placemarks_next, $1::json)', [json])
  }
  return {
    ...common,
    placemark: async (row) => {
      const record: Record<string, unknown> = {}
      COLUMNS.forEach((c, i) => { record[c] = row[i] })
      record.extended_data = JSON.parse(row[9])
      batch.push(record)
      if (batch.length >= 1000) await insertBatch()
    },
    finish: async (summary) => {
      await insertBatch()
      await writeStylesAndFolders()
      const version = await commitShadowImport(client, summary)
      release()
      return version
    }
  }
}

/**
 * Reads a KML stream and, unless dryRun, replaces the served dataset with it in one transaction:
 * readers see the old dataset until the commit, and any failure leaves the old dataset in place.
 */
export async function importPlacemarks(handle: DatabaseHandle | null, chunks: AsyncIterable<string | Buffer>, options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now()
  const createdAt = new Date().toISOString()
  const summary: ImportSummary = {
    source: options.source,
    timeZone: options.timeZone,
    dryRun: Boolean(options.dryRun || !handle),
    placemarks: 0,
    geometryTypes: { Point: 0, LineString: 0, Polygon: 0 },
    styles: 0,
    styleKinds: { Style: 0, StyleMap: 0 },
    folders: 0,
    skipped: {},
    timelineEvents: 0,
    timestampedEvents: 0,
    version: null,
    seconds: 0
  }
  const sink = handle && !options.dryRun ? await databaseSink(handle) : nullSink
  const styleIds = new Set<string>()
  const skip = (reason: string) => { summary.skipped[reason] = (summary.skipped[reason] ?? 0) + 1 }
  try {
    for await (const batch of readKmlBatches(chunks)) {
      for (const item of batch) {
        if (item.kind === 'placemark') {
          const row = toRow(summary.placemarks + 1, item.placemark, options.timeZone, createdAt)
          summary.placemarks++
          summary.geometryTypes[row[5]]++
          if (row[13]) summary.timelineEvents++
          if (row[12]) summary.timestampedEvents++
          // A promise only when the database pushes back.
          const pending = sink.placemark(row)
          if (pending) await pending
          if (summary.placemarks % 5000 === 0) options.onProgress?.(summary.placemarks)
        } else if (item.kind === 'style') {
          if (styleIds.has(item.style.id)) {
            skip('duplicate style id')
            continue
          }
          styleIds.add(item.style.id)
          summary.styles++
          summary.styleKinds[item.style.kind]++
          await sink.style(item.style.id, item.style.kind, item.style.definition)
        } else if (item.kind === 'folder') {
          summary.folders++
          await sink.folder(summary.folders, item.folder.name, item.folder.path)
        } else {
          skip(item.reason)
        }
      }
    }
    summary.version = await sink.finish(summary)
  } catch (err) {
    await sink.abort()
    throw err
  }
  options.onProgress?.(summary.placemarks)
  summary.seconds = (performance.now() - started) / 1000
  return summary
}
