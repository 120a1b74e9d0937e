export interface ProgressStream {
  write(text: string): unknown
  isTTY?: boolean
}

export function formatBytes (n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} kB`
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`
  return `${(n / 1024 ** 3).toFixed(2)} GB`
}

export function formatDuration (seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min ${s % 60} s`
  return `${Math.floor(m / 60)} h ${m % 60} min`
}

/**
 * Progress of reading one file: on a terminal, one line rewritten in place (bytes read against the
 * total, a percentage, the items so far and an estimate of the time left); elsewhere (a log file, a
 * pipe, CI) nothing until the single summary line at the end.
 */
export class ByteProgress {
  bytes = 0
  items = 0
  private readonly started = performance.now()
  private lastDraw = 0
  private drawn = false
  private readAll = false

  // What is being read, as the summary names it.
  private readonly label: string
  // The size the bytes are counted against; null when unknown.
  private readonly total: number | null
  // What the items are called: "placemarks".
  private readonly itemName: string
  private readonly out: ProgressStream
  // How often the line is redrawn, in milliseconds.
  private readonly intervalMs: number

  constructor (label: string, total: number | null, itemName: string, out: ProgressStream = process.stderr, intervalMs = 200) {
    this.label = label
    this.total = total
    this.itemName = itemName
    this.out = out
    this.intervalMs = intervalMs
  }

  /** The chunks passed through, counted as they are taken. */
  async * count<T extends { length: number }>(chunks: AsyncIterable<T>): AsyncGenerator<T> {
    for await (const chunk of chunks) {
      this.bytes += chunk.length
      this.tick()
      yield chunk
    }
    this.readAll = true
    this.tick(true)
  }

  setItems (n: number): void {
    this.items = n
    this.tick()
  }

  /** The line as the terminal shows it now. */
  line (now = performance.now()): string {
    const seconds = (now - this.started) / 1000
    const items = `${this.items.toLocaleString('en-US')} ${this.itemName}`
    if (this.readAll) return `read all ${formatBytes(this.bytes)}; finishing…`
    if (this.total === null || this.total <= 0) return `${formatBytes(this.bytes)} read, ${items}`
    const fraction = Math.min(1, this.bytes / this.total)
    let estimate = ''
    if (seconds >= 1 && fraction > 0) {
      const left = (seconds * (1 - fraction)) / fraction
      estimate = left < 1 ? ', under a second left' : `, about ${formatDuration(left)} left`
    }
    return `${formatBytes(this.bytes)} of ${formatBytes(this.total)} (${Math.floor(fraction * 100)}%), ${items}${estimate}`
  }

  private tick (force = false): void {
    if (!this.out.isTTY) return
    const now = performance.now()
    if (!force && now - this.lastDraw < this.intervalMs) return
    this.lastDraw = now
    this.out.write(`\r\x1b[2K${this.line(now)}`)
    this.drawn = true
  }

  /** Ends the progress: the line in place is cleared, and one summary line is written. */
  done (): void {
    const seconds = (performance.now() - this.started) / 1000
    if (this.drawn) this.out.write('\r\x1b[2K')
    const rate = seconds > 0 ? `, ${formatBytes(Math.round(this.bytes / seconds))}/s` : ''
    this.out.write(`read ${formatBytes(this.bytes)} of ${this.label} in ${seconds.toFixed(2)} s (${this.items.toLocaleString('en-US')} ${this.itemName}${rate})\n`)
  }

  /** Ends the progress after a failure: the line in place is cleared, nothing else is said. */
  abandon (): void {
    if (this.drawn) this.out.write('\r\x1b[2K')
    this.drawn = false
  }
}
