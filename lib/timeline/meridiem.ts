/**
 * AM or PM for the ambiguous times of placemark names (an `M/D/YYYY` time with no AM/PM and an hour of
 * 1..12): each takes the AM/PM of the nearest placemark in document order whose name has the same date and
 * an explicit AM/PM, the earlier on a tie; with none, it stays 24-hour. Fed in document order, as an import
 * reads the placemarks: a decision may have to wait for a later placemark, so it is told through `decide`
 * when it is known, at the latest at `end()`. Held meanwhile: per date, the last explicit AM/PM seen and the
 * ambiguous events since then (a few numbers each, not the placemarks).
 */
export type Meridiem = 'am' | 'pm'

interface Explicit { index: number; meridiem: Meridiem }
interface Waiting<T> { index: number; before: Explicit | null; item: T }

export class MeridiemInference<T> {
  private readonly last = new Map<string, Explicit>()
  private readonly waiting = new Map<string, Waiting<T>[]>()
  private readonly decide: (item: T, meridiem: Meridiem) => void

  constructor (decide: (item: T, meridiem: Meridiem) => void) {
    this.decide = decide
  }

  /** A name with an explicit AM/PM, at this position in document order. */
  explicit (index: number, date: string, meridiem: Meridiem): void {
    const waiting = this.waiting.get(date)
    if (waiting) {
      for (const w of waiting) {
        // The earlier wins a tie.
        const before = w.before !== null && w.index - w.before.index <= index - w.index
        this.decide(w.item, before ? w.before!.meridiem : meridiem)
      }
      this.waiting.delete(date)
    }
    this.last.set(date, { index, meridiem })
  }

  /** An ambiguous time at this position: decided now or later. */
  ambiguous (index: number, date: string, item: T): void {
    let list = this.waiting.get(date)
    if (!list) this.waiting.set(date, list = [])
    list.push({ index, before: this.last.get(date) ?? null, item })
  }

  /** No more placemarks: the events still waiting take the explicit one before them, or none (24-hour). */
  end (): void {
    for (const list of this.waiting.values()) {
      for (const w of list) if (w.before !== null) this.decide(w.item, w.before.meridiem)
    }
    this.waiting.clear()
    this.last.clear()
  }
}
