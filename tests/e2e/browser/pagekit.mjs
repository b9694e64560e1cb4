// What the page scripts (builtin_page.mjs, aikit_page.mjs) share: Debian's Chromium through
// playwright-core, pages watched for errors and for requests leaving the page's origin,
// numbered screenshots in SCREENSHOTS, waits on what the page shows (never on time), and
// one JSON report on stdout (`failure` set, and a last screenshot of every tab, when a step
// failed).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// `steps(session)` drives the pages; `describe(page)` says what a failed tab showed.
export async function run(base, { viewport, timeout = 30_000 } = {}, steps, describe) {
  const shots = process.env.SCREENSHOTS || mkdtempSync(join(tmpdir(), "chat-bff-shots-"));
  const seen = { shots: [], external: [], errors: [] };
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "chat-bff-page-")), {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 30_000,
  });

  const session = {
    seen,
    base,
    async tab(name) {
      const page = name === "tab1" && context.pages()[0] ? context.pages()[0] : await context.newPage();
      page.setDefaultTimeout(timeout);
      page.on("pageerror", (e) => seen.errors.push(`${name}: ${e}`));
      page.on("console", (m) => console.error(`[${name} ${m.type()}] ${m.text()}`));
      page.on("request", (r) => {
        if (!r.url().startsWith(base) && !r.url().startsWith("data:")) seen.external.push(r.url());
      });
      return page;
    },
    async shot(page, step) {
      const path = join(shots, `${String(seen.shots.length + 1).padStart(2, "0")}-${step}.png`);
      await page.screenshot({ path, fullPage: true });
      seen.shots.push(path);
    },
    async stored(conversation) {
      return (await fetch(`${base}/api/conversations/${conversation}`)).json();
    },
  };

  try {
    await steps(session);
  } catch (error) {
    seen.failure = String(error.stack || error);
    for (const page of context.pages()) {
      seen.failure += `\n--- page ${page.url()} ${await describe(page).catch(() => "?")}`;
      await session.shot(page, "failure").catch(() => null);
    }
  } finally {
    await context.close();
  }
  process.stdout.write(JSON.stringify(seen));
}

// Until some node matching `selector` contains `text`.
export const untilText = (page, selector, text) =>
  page.waitForFunction(([s, t]) => [...document.querySelectorAll(s)].some((n) => n.textContent.includes(t)), [selector, text]);

// Until there are more than `before` nodes matching `selector` (a new answer, not the last
// one before the question) and the last has more than `words` words.
export const untilWords = (page, selector, words, before) =>
  page.waitForFunction(([s, w, b]) => {
    const nodes = [...document.querySelectorAll(s)];
    return nodes.length > b && nodes[nodes.length - 1].textContent.trim().split(/\s+/).length > w;
  }, [selector, words, before]);

// Until there are more than `before` nodes matching `selector` and the last contains `text`.
export const untilNewText = (page, selector, text, before) =>
  page.waitForFunction(([s, t, b]) => {
    const nodes = [...document.querySelectorAll(s)];
    return nodes.length > b && nodes[nodes.length - 1].textContent.includes(t);
  }, [selector, text, before]);

// How many nodes match `selector` now.
export const count = (page, selector) => page.$$eval(selector, (nodes) => nodes.length);

// The text of every node matching `selector`.
export const texts = (page, selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
