import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { CliError, defineCommand, runAsProgram } from '../commands/cli.ts'
import { mulberry32 } from '../lib/random.ts'

export { mulberry32 }

const CITIES: [string, number, number][] = [
  ['Las Vegas', -115.17, 36.11], ['Los Angeles', -118.24, 34.05], ['New York', -74.0, 40.71], ['London', -0.12, 51.5],
  ['Paris', 2.35, 48.86], ['Tokyo', 139.69, 35.69], ['Sydney', 151.21, -33.87], ['Sao Paulo', -46.63, -23.55],
  ['Nairobi', 36.82, -1.29], ['Mumbai', 72.88, 19.08], ['Suva', 178.44, -18.14], ['Reykjavik', -21.94, 64.15]
]

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;')
const fmt = (n: number) => n.toFixed(6)

/** Writes a KML document with `count` placemarks spread around a dozen cities, in nested folders. */
export async function generateKml (path: string, count: number, seed = 1): Promise<void> {
  const rand = mulberry32(seed)
  const out = createWriteStream(path, { highWaterMark: 1 << 20 })
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain')
  }
  await write('<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2">\n<Document>\n<name>Synthetic placemarks</name>\n')
  for (let i = 0; i < 20; i++) await write(`<Style id="s${i}"><IconStyle><scale>1</scale></IconStyle></Style>\n`)
  const perCity = Math.ceil(count / CITIES.length)
  let written = 0
  for (const [city, lon, lat] of CITIES) {
    await write(`<Folder><name>${city}</name>\n`)
    for (let d = 0; d < 10 && written < count; d++) {
      await write(`<Folder><name>District ${d + 1}</name>\n`)
      const n = Math.min(Math.ceil(perCity / 10), count - written)
      for (let k = 0; k < n; k++) {
        written++
        const x = lon + (rand() - 0.5) * 0.6
        const y = lat + (rand() - 0.5) * 0.6
        const r = rand()
        let geometry: string
        if (r < 0.8) geometry = `<Point><coordinates>${fmt(x)},${fmt(y)},0</coordinates></Point>`
        else if (r < 0.92) geometry = `<LineString><coordinates>${fmt(x)},${fmt(y)},0 ${fmt(x + 0.004)},${fmt(y + 0.003)},0 ${fmt(x + 0.009)},${fmt(y + 0.001)},0</coordinates></LineString>`
        else geometry = `<Polygon><outerBoundaryIs><LinearRing><coordinates>${fmt(x)},${fmt(y)},0 ${fmt(x + 0.005)},${fmt(y)},0 ${fmt(x + 0.005)},${fmt(y + 0.005)},0 ${fmt(x)},${fmt(y + 0.005)},0 ${fmt(x)},${fmt(y)},0</coordinates></LinearRing></outerBoundaryIs></Polygon>`
        const day = 1 + Math.floor(rand() * 28)
        const hour = 1 + Math.floor(rand() * 12)
        const minute = String(Math.floor(rand() * 60)).padStart(2, '0')
        const name = rand() < 0.002 ? `10/${day}/2017 ${hour}:${minute} ${rand() < 0.5 ? 'AM' : 'PM'} - Report ${written}` : `Place ${written}`
        await write(`<Placemark><name>${esc(name)}</name><description>Synthetic placemark ${written} in ${esc(city)}</description><styleUrl>#s${written % 20}</styleUrl>` +
          `<ExtendedData><Data name="index"><value>${written}</value></Data></ExtendedData>${geometry}</Placemark>\n`)
      }
      await write('</Folder>\n')
    }
    await write('</Folder>\n')
  }
  await write('</Document>\n</kml>\n')
  out.end()
  await once(out, 'finish')
}

export const command = defineCommand({
  usage: 'npm run generate:kml -- <out.kml> [--count N] [--seed S]',
  positionals: ['<out.kml>'],
  help: `
Writes a synthetic KML document for load tests: placemarks (mostly points, some lines and polygons)
around a dozen cities, in nested folders, with shared styles; the same arguments give the same file.
An existing file is overwritten.

options:
  --count N    number of placemarks (default: 1000000)
  --seed S     random seed, 0 to 4294967295 (default: 1)
  -h, --help   show this help and exit`
}, { options: { count: { type: 'string', default: '1000000' }, seed: { type: 'string', default: '1' } } }, async ({ values, positionals }, io) => {
  const count = Number(values.count)
  const seed = Number(values.seed)
  if (!/^\d+$/.test(values.count ?? '') || count < 1) throw new CliError('--count must be a positive integer (see --help)', 2)
  if (!/^\d+$/.test(values.seed ?? '') || seed > 2 ** 32 - 1) throw new CliError('--seed must be an integer from 0 to 4294967295 (see --help)', 2)
  await generateKml(positionals[0]!, count, seed)
  io.stderr.write(`wrote ${count} placemarks to ${positionals[0]}\n`)
})

await runAsProgram(command, import.meta.url)
