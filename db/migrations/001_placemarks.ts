import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE placemarks (
      id integer PRIMARY KEY,
      name text NOT NULL,
      description text,
      style_id text,
      folder_path text[] NOT NULL DEFAULT '{}',
      geometry_type text NOT NULL CHECK (geometry_type IN ('Point', 'LineString', 'Polygon')),
      geometry text NOT NULL,
      coordinates_raw text,
      media_links text[] NOT NULL DEFAULT '{}',
      extended_data jsonb NOT NULL DEFAULT '[]',
      bbox box NOT NULL,
      event_date date,
      event_timestamp timestamptz,
      event_sort timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`CREATE INDEX placemarks_bbox_idx ON placemarks USING gist (bbox) INCLUDE (id)`.execute(db)
  await sql`CREATE INDEX placemarks_folder_path_idx ON placemarks USING gin (folder_path)`.execute(db)
  await sql`CREATE INDEX placemarks_timeline_idx ON placemarks (event_sort, id) WHERE event_sort IS NOT NULL`.execute(db)
  await sql`
    CREATE TABLE styles (
      id text PRIMARY KEY,
      kind text NOT NULL CHECK (kind IN ('Style', 'StyleMap')),
      definition jsonb NOT NULL DEFAULT '{}'
    )`.execute(db)
  await sql`
    CREATE TABLE folders (
      id integer PRIMARY KEY,
      name text NOT NULL,
      path text[] NOT NULL
    )`.execute(db)
  await sql`
    CREATE TABLE dataset (
      id integer PRIMARY KEY CHECK (id = 1),
      version bigint NOT NULL,
      source text,
      timezone text NOT NULL,
      imported_at timestamptz NOT NULL,
      summary jsonb NOT NULL DEFAULT '{}'
    )`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  for (const table of ['dataset', 'folders', 'styles', 'placemarks']) {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db)
  }
}
