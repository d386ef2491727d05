/** Debian's Chromium for the browser suites: whether it is here, and how every suite launches it. */
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

const CHROMIUM = '/usr/bin/chromium'

/** True when Chromium is installed; otherwise says which suite is skipped. */
export function chromiumAvailable(suite: string): boolean {
  const available = existsSync(CHROMIUM)
  if (!available) console.warn(`[skip] ${suite}: ${CHROMIUM} is missing`)
  return available
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
}
