import type { BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../test/support/browser.ts'
import { percentile } from './scale.ts'

// The overview is drawn: its event count is on its card and its chart has a canvas.
const drawn = (page: Page) => page.waitForFunction(() => document.querySelector('.card[data-key="events"][data-value]') !== null &&
  document.querySelector('.chart canvas') !== null, undefined, { timeout: 60_000 })

/**
 * A cold load of /dashboard, as a signed-in admin opens it in a new browser: an empty HTTP cache, the
 * refresh cookie of an earlier sign-in through the development provider (renewed by each load, and
 * carried to the next), and the time from the navigation's start to the overview drawn, in Chromium.
 */
export async function dashboardColdLoad (base: string, runs = 5): Promise<{ runs: number; p50_ms: number; max_ms: number }> {
  const browser = await launchBrowser()
  try {
    let context: BrowserContext = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${base}/dashboard`)
    await page.click('#sign-in')
    await page.click('a.user[data-user="ada"]')
    await drawn(page)
    // The sign-in ends on PUBLIC_URL's origin, where its cookie belongs: the cold loads go there too.
    const origin = new URL(page.url()).origin
    let state = await context.storageState()
    await context.close()
    const times: number[] = []
    for (let i = 0; i < runs; i++) {
      context = await browser.newContext({ storageState: state })
      const cold = await context.newPage()
      await cold.goto(`${origin}/dashboard`)
      await drawn(cold)
      times.push(await cold.evaluate(() => performance.now()))
      state = await context.storageState()
      await context.close()
    }
    return { runs, p50_ms: Math.round(percentile(times.sort((a, b) => a - b), 0.5)), max_ms: Math.round(Math.max(...times)) }
  } finally {
    await browser.close()
  }
}
