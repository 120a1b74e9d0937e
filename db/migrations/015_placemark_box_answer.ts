import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

// The exact test as this migration made it (017 makes it faster and its down restores this).
export const SHAPE_INTERSECTS = `    CREATE FUNCTION placemark_shape_intersects (c float8[], x0 float8, y0 float8, x1 float8, y1 float8) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE
      polygon boolean := c[1] = 2;
      paths integer := c[2];
      at integer := 3;
      n integer;
      i integer;
      j integer;
      ax float8;
      ay float8;
      qx float8;
      qy float8;
      dx float8;
      dy float8;
      s1 float8;
      s2 float8;
      s3 float8;
      s4 float8;
      px float8;
      py float8;
      inside boolean;
    BEGIN
      IF paths = 0 THEN
        RETURN false;
      END IF;
      IF NOT polygon THEN
        paths := 1;
      ELSIF c[3] = 0 THEN
        RETURN false;
      END IF;
      -- Any path (ring) meeting the box: a lone position inside it, or a segment crossing it; a ring
      -- closes whether or not its last position repeats its first.
      FOR r IN 1..paths LOOP
        n := c[at];
        IF n = 1 THEN
          IF c[at + 1] >= x0 AND c[at + 1] <= x1 AND c[at + 2] >= y0 AND c[at + 2] <= y1 THEN
            RETURN true;
          END IF;
        ELSIF n > 1 THEN
          FOR k IN 1..(CASE WHEN polygon THEN n ELSE n - 1 END) LOOP
            i := at + 2 * k - 1;
            ax := c[i];
            ay := c[i + 1];
            IF k < n THEN
              qx := c[i + 2];
              qy := c[i + 3];
            ELSE
              qx := c[at + 1];
              qy := c[at + 2];
            END IF;
            -- Separating axes: the extents overlap and the corners are not all strictly on one side.
            IF greatest(ax, qx) >= x0 AND least(ax, qx) <= x1 AND greatest(ay, qy) >= y0 AND least(ay, qy) <= y1 THEN
              dx := qx - ax;
              dy := qy - ay;
              s1 := dx * (y0 - ay) - dy * (x0 - ax);
              s2 := dx * (y0 - ay) - dy * (x1 - ax);
              s3 := dx * (y1 - ay) - dy * (x1 - ax);
              s4 := dx * (y1 - ay) - dy * (x0 - ax);
              IF NOT ((s1 > 0 AND s2 > 0 AND s3 > 0 AND s4 > 0) OR (s1 < 0 AND s2 < 0 AND s3 < 0 AND s4 < 0)) THEN
                RETURN true;
              END IF;
            END IF;
          END LOOP;
        END IF;
        at := at + 1 + 2 * n;
      END LOOP;
      IF NOT polygon THEN
        RETURN false;
      END IF;
      -- No ring meets the box: its centre is inside the polygon (inside the outer ring, outside every
      -- hole; even-odd ray casting) exactly when the box is.
      px := (x0 + x1) / 2;
      py := (y0 + y1) / 2;
      at := 3;
      FOR r IN 1..paths LOOP
        n := c[at];
        inside := false;
        j := n - 1;
        FOR k IN 0..n - 1 LOOP
          ax := c[at + 1 + 2 * k];
          ay := c[at + 2 + 2 * k];
          qx := c[at + 1 + 2 * j];
          qy := c[at + 2 + 2 * j];
          IF (ay > py) <> (qy > py) THEN
            IF px < ax + ((py - ay) * (qx - ax)) / (qy - ay) THEN
              inside := NOT inside;
            END IF;
          END IF;
          j := k;
        END LOOP;
        IF inside <> (r = 1) THEN
          RETURN false;
        END IF;
        at := at + 1 + 2 * n;
      END LOOP;
      RETURN true;
    END
    $$`

/**
 * What the box query reads, stored per placemark so that the database alone decides and answers it:
 *
 * - `summary`: the placemark's summary as the API serializes it (the JSON object of the list and box
 *   answers, key order included), so that a box answer is the stored texts joined by commas.
 * - `min_lon`, `min_lat`, `max_lon`, `max_lat`: the bounding box's corners (the `bbox` column's, as
 *   exact float8), for the exact bounds test after the GiST index's fuzzy `&&` (PostgreSQL's box
 *   operators allow 1e-6 of slack); plain columns, so that ANALYZE keeps their statistics.
 * - `shape`: the geometry's positions packed into float8 (lib/geo/box.ts packGeometry: its kind, its
 *   number of paths, then per path the number of positions and their lon, lat pairs); NULL for a
 *   point, whose bounds decide exactly.
 * - `placemark_summary(…)`: that summary from the placemark's columns.
 * - `placemark_shape_intersects(shape, min_lon, min_lat, max_lon, max_lat)`: planar ST_Intersects of
 *   a packed geometry and a rectangle, boundary inclusive, the arithmetic of lib/geo/box.ts step for
 *   step (so both give the same answer to the last bit).
 *
 * Rows already imported are filled here; an import writes the columns itself (lib/import/placemarks.ts).
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql.raw(SHAPE_INTERSECTS).execute(db)

  await sql`
    ALTER TABLE placemarks
      ADD COLUMN summary text,
      ADD COLUMN shape float8[],
      ADD COLUMN min_lon float8,
      ADD COLUMN min_lat float8,
      ADD COLUMN max_lon float8,
      ADD COLUMN max_lat float8`.execute(db)

  // The stored GeoJSON read back into the packed form (json, not jsonb: a number's text is kept as
  // written, the shortest that reads back to the same float8).
  await sql`
    CREATE FUNCTION pg_temp.placemark_pack (g json) RETURNS float8[] LANGUAGE sql IMMUTABLE AS $$
      SELECT CASE g->>'type'
        WHEN 'Point' THEN NULL
        WHEN 'LineString' THEN ARRAY[1, 1, json_array_length(g->'coordinates')]::float8[] || ARRAY(
          SELECT xy.v FROM json_array_elements(g->'coordinates') WITH ORDINALITY AS p(pos, i),
            LATERAL (VALUES (1, (p.pos->>0)::float8), (2, (p.pos->>1)::float8)) AS xy(k, v)
          ORDER BY p.i, xy.k)
        ELSE ARRAY[2, json_array_length(g->'coordinates')]::float8[] || ARRAY(
          SELECT e.v FROM json_array_elements(g->'coordinates') WITH ORDINALITY AS r(ring, ri),
            LATERAL (
              SELECT json_array_length(r.ring)::float8 AS v, 0::bigint AS i, 0 AS k
              UNION ALL
              SELECT xy.v, p.i, xy.k FROM json_array_elements(r.ring) WITH ORDINALITY AS p(pos, i),
                LATERAL (VALUES (1, (p.pos->>0)::float8), (2, (p.pos->>1)::float8)) AS xy(k, v)
            ) AS e
          ORDER BY r.ri, e.i, e.k)
      END
    $$`.execute(db)

  // The summary as db/placemarks.ts toSummary and JSON.stringify give it: to_json escapes a string as
  // JSON.stringify does, and the times are formatted as the summary query formats them. Immutable
  // (the times are formatted in UTC), so that an import's staging table computes it as a generated
  // column while the file is still being read.
  const time = (name: string) => `coalesce('"' || to_char(${name} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`
  const text = (name: string) => `coalesce(to_json(${name})::text, 'null')`
  await sql`
    CREATE FUNCTION placemark_summary (id integer, name text, description text, style_id text, folder_path text[],
      geometry_type text, geometry text, coordinates_raw text, media_links text[], created_at timestamptz,
      time_begin timestamptz, time_end timestamptz) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN ${sql.raw(`'{"id":' || id || ',"name":' || ${text('name')} || ',"description":' || ${text('description')} ||
        ',"style_id":' || ${text('style_id')} || ',"folder_path":' || array_to_json(folder_path)::text ||
        ',"geometry_type":' || ${text('geometry_type')} || ',"geometry":' || ${text('geometry')} ||
        ',"coordinates_raw":' || ${text('coordinates_raw')} || ',"media_links":' || array_to_json(media_links)::text ||
        ',"created_at":"' || to_char(date_trunc('milliseconds', created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"' ||
        ',"time_begin":' || ${time('time_begin')} || ',"time_end":' || ${time('time_end')} || '}'`)};
    END
    $$`.execute(db)
  await sql`
    UPDATE placemarks SET
      summary = placemark_summary(id, name, description, style_id, folder_path, geometry_type, geometry, coordinates_raw,
        media_links, created_at, time_begin, time_end),
      shape = pg_temp.placemark_pack(geometry::json),
      min_lon = (bbox[1])[0], min_lat = (bbox[1])[1], max_lon = (bbox[0])[0], max_lat = (bbox[0])[1]`.execute(db)
  await sql`DROP FUNCTION pg_temp.placemark_pack(json)`.execute(db)
  await sql`
    ALTER TABLE placemarks
      ALTER COLUMN summary SET NOT NULL,
      ALTER COLUMN min_lon SET NOT NULL,
      ALTER COLUMN min_lat SET NOT NULL,
      ALTER COLUMN max_lon SET NOT NULL,
      ALTER COLUMN max_lat SET NOT NULL`.execute(db)
  await sql`ANALYZE placemarks`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE placemarks DROP COLUMN summary, DROP COLUMN shape, DROP COLUMN min_lon, DROP COLUMN min_lat, DROP COLUMN max_lon, DROP COLUMN max_lat`.execute(db)
  await sql`DROP FUNCTION IF EXISTS placemark_shape_intersects(float8[], float8, float8, float8, float8)`.execute(db)
  await sql`DROP FUNCTION IF EXISTS placemark_summary(integer, text, text, text, text[], text, text, text, text[], timestamptz, timestamptz, timestamptz)`.execute(db)
}
