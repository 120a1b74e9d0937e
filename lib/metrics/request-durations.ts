/**
 * A Prometheus histogram of request durations whose series are bound once and then only counted into:
 * observing is a bucket search and three additions, with no label object, hash or allocation per
 * request (prom-client's Histogram validates and hashes the labels on every observation, its labels()
 * children too). Registered in a prom-client Registry like any of its metrics; its exposition is the
 * same text a prom-client Histogram with these buckets and labels gives.
 */

export interface DurationLabels {
  method: string
  route: string
  status_code: number
}

/** One series: a (method, route, status) child with its own bucket counts. */
export interface DurationSeries {
  readonly labels: Readonly<DurationLabels>
  // Observations per bucket (not cumulative); the last slot counts those past every bound.
  readonly counts: Float64Array
  sum: number
  count: number
}

interface MetricData { name: string; help: string; type: string; values: Sample[]; aggregator: string }

interface Sample {
  labels: Record<string, string | number>
  sharedLabels?: Record<string, string | number>
  value: number
  metricName: string
  exemplar?: null
}

export class RequestDurations {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #series: DurationSeries[] = []
  readonly #bounds: Float64Array

  readonly name: string
  readonly help: string
  readonly bounds: readonly number[]
  constructor (name: string, help: string, bounds: readonly number[]) {
    this.name = name
    this.help = help
    this.bounds = bounds
    this.#bounds = Float64Array.from(bounds)
  }

  /** A new series for these labels; the caller keeps it and observes into it. */
  series (labels: DurationLabels): DurationSeries {
    const series = { labels: Object.freeze({ ...labels }), counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }
    this.#series.push(series)
    return series
  }

  observe (series: DurationSeries, seconds: number): void {
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && seconds > bounds[i]!) i++
    series.counts[i]++
    series.sum += seconds
    series.count++
  }

  // The registry's side, in prom-client's own sample layout: cumulative buckets, then +Inf, sum and count,
  // each series' labels shared by its samples (the text exposition) or merged into them (JSON).
  async get (): Promise<MetricData> {
    const data = await this.getForPromString()
    data.values = data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }))
    return data
  }

  async getForPromString (): Promise<MetricData> {
    const values: Sample[] = []
    const bucket = `${this.name}_bucket`
    for (const series of this.#series) {
      const shared = series.labels as unknown as Record<string, string | number>
      let cumulative = 0
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += series.counts[i]!
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: shared, value: cumulative, metricName: bucket, exemplar: null })
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: series.count, metricName: bucket, exemplar: null })
      values.push({ labels: {}, sharedLabels: shared, value: series.sum, metricName: `${this.name}_sum` })
      values.push({ labels: {}, sharedLabels: shared, value: series.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  reset (): void {
    for (const series of this.#series) {
      series.counts.fill(0)
      series.sum = 0
      series.count = 0
    }
  }
}
