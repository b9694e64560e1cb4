// Drives the AIKit example (examples/aikit-chat, built and served by `vite preview` in front of
// a live chat-bff) in Debian's Chromium like a person would: the History list, a server-tool
// turn, an approval accepted in the page while a second tab looks on, and a reload in the
// middle of a long answer. Prints what it saw as JSON; screenshots of each step go to
// SCREENSHOTS (a directory). Usage: node aikit_page.mjs PAGE_URL
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.argv[2];
const SHOTS = process.env.SCREENSHOTS || mkdtempSync(join(tmpdir(), "chat-bff-aikit-shots-"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const seen = { shots: [], external: [], errors: [] };

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "chat-bff-aikit-")), {
  executablePath: CHROMIUM,
  headless: true,
  viewport: { width: 1100, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  timeout: 30_000,
});

function watch(page, name) {
  page.setDefaultTimeout(30_000);
  page.on("pageerror", (e) => seen.errors.push(`${name}: ${e}`));
  page.on("console", (m) => console.error(`[${name} ${m.type()}] ${m.text()}`));
  page.on("request", (r) => {
    if (!r.url().startsWith(BASE) && !r.url().startsWith("data:")) seen.external.push(r.url());
  });
  return page;
}

async function shot(page, step) {
  const path = join(SHOTS, `${String(seen.shots.length + 1).padStart(2, "0")}-${step}.png`);
  await page.screenshot({ path, fullPage: true });
  seen.shots.push(path);
}

async function ask(page, text) {
  await page.fill("[data-qa='prompt'] textarea", text);
  await page.click("[data-qa='submit']");
}

const idle = (page) => page.waitForSelector(".page[data-status='ready']", { state: "attached" });
const card = (name, status) => `[data-qa='tool:${name}:${status}']`;
const assistantTexts = (page) =>
  page.$$eval(".g-aikit-assistant-message .g-aikit-markdown-renderer", (nodes) => nodes.map((n) => n.textContent.trim()));
const cards = (page) =>
  page.$$eval("[data-qa^='tool:']", (nodes) =>
    nodes.map((n) => {
      const [, name, status] = n.dataset.qa.split(":");
      return { name, status, buttons: [...n.querySelectorAll("button")].map((b) => b.textContent.trim()).filter(Boolean) };
    }),
  );

try {
  const one = watch(context.pages()[0] ?? (await context.newPage()), "tab1");
  await one.goto(`${BASE}/`);

  // 1. History: the conversation list (one made before the page opened).
  await one.click("[data-qa='history-button']");
  await one.waitForSelector("[data-qa='history'] >> text=Earlier plans");
  seen.history = await one.textContent("[data-qa='history']");
  await shot(one, "history");
  await one.click("[data-qa='history-button']");
  await one.waitForSelector("[data-qa='history']", { state: "hidden" });

  // 2. A turn with server tools: cards appear and finish.
  await ask(one, "add a Person node named Ada Lovelace and connect her to the Analytical Engine with a designed relation");
  await one.waitForSelector(card("connect", "success"));
  await idle(one);
  seen.conversation = await one.getAttribute(".page", "data-conversation");
  seen.tools_turn = { cards: await cards(one), texts: await assistantTexts(one) };
  await shot(one, "server-tools");

  // 3. A tool that needs a human: the card asks, a second tab shows the same card.
  await ask(one, "delete Ada Lovelace");
  await one.waitForSelector(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  await idle(one);
  seen.approval_asked = await cards(one);
  await shot(one, "approval-asked");
  const two = watch(await context.newPage(), "tab2");
  await two.goto(`${BASE}/#${seen.conversation}`);
  await two.waitForSelector(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  seen.second_tab_before = await cards(two);
  await shot(two, "second-tab-sees-the-approval");
  await one.click(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  await one.waitForSelector(card("delete_node", "success"));
  await one.waitForFunction(() => [...document.querySelectorAll(".g-aikit-markdown-renderer")].some((n) => n.textContent.includes("The tool card shows what happened")));
  await idle(one);
  seen.after_approval = { cards: await cards(one), texts: await assistantTexts(one) };
  await shot(one, "approved");
  // The second tab follows the conversation: it shows the decision without a reload.
  await two.waitForSelector(card("delete_node", "success"));
  seen.second_tab_after = await cards(two);
  await shot(two, "second-tab-after-decision");
  await two.close();

  // 4. A reload in the middle of a long answer resumes it without loss.
  await ask(one, "tell me a long story");
  await one.waitForFunction(() => {
    const texts = [...document.querySelectorAll(".g-aikit-assistant-message .g-aikit-markdown-renderer")];
    return texts.length && texts[texts.length - 1].textContent.split(" ").length > 20;
  });
  seen.before_reload = (await assistantTexts(one)).at(-1);
  await shot(one, "mid-stream");
  await one.reload();
  await one.waitForSelector(".page[data-status='streaming']", { state: "attached" });
  seen.resumed_while_running = true;
  await idle(one);
  await one.waitForFunction((n) => document.querySelectorAll(".g-aikit-assistant-message").length >= n, 3);
  seen.after_reload = (await assistantTexts(one)).at(-1);
  await shot(one, "resumed-after-reload");
  const stored = await (await fetch(`${BASE}/api/conversations/${seen.conversation}`)).json();
  seen.stored_last = stored.messages.at(-1);
} catch (error) {
  seen.failure = String(error.stack || error);
  for (const page of context.pages()) {
    seen.failure += `\n--- page ${page.url()} status: ${await page.getAttribute(".page", "data-status").catch(() => "?")}`;
    seen.failure += `\n${(await page.innerText("#root").catch(() => "?")).slice(-2000)}`;
    await shot(page, "failure").catch(() => null);
  }
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(seen));
