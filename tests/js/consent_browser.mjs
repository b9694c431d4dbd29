// Open the authorization server's consent page in headless Chromium (Debian's, driven by
// playwright-core) as a person on a phone would, JavaScript off: follow the sign-in to the
// consent page, keep a screenshot, press Allow, and report where the browser was sent.
//   node consent_browser.mjs <authorize url> <client redirect prefix> <screenshot path>
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [authorizeUrl, redirectPrefix, screenshot] = process.argv.slice(2);
const { chromium } = await import(
  pathToFileURL(path.join(process.env.BROWSER_MODULES, 'playwright-core/index.mjs')).href);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const out = {};
try {
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2, isMobile: true });
  const page = await context.newPage();
  await page.goto(authorizeUrl);
  out.title = await page.title();
  out.heading = await page.textContent('h1');
  out.scopes = await page.$$eval('li code', (els) => els.map((e) => e.textContent));
  out.viewportMeta = await page.getAttribute('meta[name=viewport]', 'content');
  out.scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth).catch(() => null);
  await page.screenshot({ path: screenshot, fullPage: true });
  await Promise.all([page.waitForURL(`${redirectPrefix}**`), page.click('button.allow')]);
  out.landed = page.url();
} finally {
  await browser.close();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
