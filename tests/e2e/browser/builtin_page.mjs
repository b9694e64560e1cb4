// Drives chat-bff's built-in page (GET /) in Debian's Chromium like a person would:
// a server-tool turn, an approval decided in the page while a second tab looks on (and
// sees the decision live, without reloading), and a reload in the middle of a long answer. Prints what it saw as JSON; screenshots of each
// step go to SCREENSHOTS (a directory). Usage: node builtin_page.mjs BASE_URL
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const BASE = process.argv[2];
const SHOTS = process.env.SCREENSHOTS || mkdtempSync(join(tmpdir(), "chat-bff-shots-"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const seen = { shots: [], external: [], errors: [] };

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "chat-bff-page-")), {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  timeout: 30_000,
});

function watch(page, name) {
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (e) => seen.errors.push(`${name}: ${e}`));
  page.on("console", (m) => console.error(`[${name} ${m.type()}] ${m.text()}`));
  page.on("request", (r) => {
    if (!r.url().startsWith(BASE)) seen.external.push(r.url());
  });
  return page;
}

async function shot(page, step) {
  const path = join(SHOTS, `${String(seen.shots.length + 1).padStart(2, "0")}-${step}.png`);
  await page.screenshot({ path, fullPage: true });
  seen.shots.push(path);
}

async function ask(page, text) {
  await page.fill("#input", text);
  await page.click("#send");
}

const idle = (page) => page.waitForFunction(() => document.querySelector("#stop").hidden);
const assistantTexts = (page) =>
  page.$$eval(".msg.assistant .text", (nodes) => nodes.map((n) => n.textContent));
const cards = (page) =>
  page.$$eval(".tool", (nodes) => nodes.map((n) => ({ id: n.dataset.toolCallId, status: n.dataset.status, name: n.querySelector(".name").textContent })));

try {
  const one = watch(context.pages()[0] ?? (await context.newPage()), "tab1");
  await one.goto(`${BASE}/`);
  await one.click("#new");
  await one.waitForFunction(() => location.hash.length > 1);
  seen.conversation = (await one.evaluate(() => location.hash)).slice(1);

  // 1. A turn with server tools: cards appear and finish.
  await ask(one, "add a Person node named Ada Lovelace and connect her to the Analytical Engine with a designed relation");
  await one.waitForSelector(".tool[data-status='success']");
  await idle(one);
  seen.tools_turn = { cards: await cards(one), texts: await assistantTexts(one) };
  await shot(one, "server-tools");

  // 2. A tool that needs a human: the card asks, a second tab shows the same card.
  await ask(one, "delete Ada Lovelace");
  await one.waitForSelector(".tool[data-status='waitingConfirmation'] button.approve");
  await idle(one);
  await shot(one, "approval-asked");
  const two = watch(await context.newPage(), "tab2");
  await two.goto(`${BASE}/#${seen.conversation}`);
  await two.waitForSelector(".tool[data-status='waitingConfirmation'] button.approve");
  seen.second_tab_before = await cards(two);
  await shot(two, "second-tab-sees-the-approval");
  await one.click(".tool[data-status='waitingConfirmation'] button.approve");
  await one.waitForFunction(() =>
    [...document.querySelectorAll(".tool")].some((n) => n.querySelector(".name").textContent === "delete_node" && n.dataset.status === "success"),
  );
  // The run the decision resumed arrives on the follow stream (run_start, text, run_end).
  await one.waitForFunction(() =>
    [...document.querySelectorAll(".msg.assistant .text")].some((n) => n.textContent.includes("The tool card shows what happened")),
  );
  await idle(one);
  seen.after_approval = { cards: await cards(one), texts: await assistantTexts(one) };
  await shot(one, "approved");
  // No reload: the second tab hears the decision and the run it resumed on the
  // conversation's follow stream.
  seen.second_tab_reloads = 0;
  two.on("framenavigated", () => { seen.second_tab_reloads += 1; });
  await two.waitForFunction(() =>
    [...document.querySelectorAll(".tool")].some((n) => n.querySelector(".name").textContent === "delete_node" && n.dataset.status === "success"),
  );
  await two.waitForFunction(() =>
    [...document.querySelectorAll(".msg.assistant .text")].some((n) => n.textContent.includes("The tool card shows what happened")),
  );
  seen.second_tab_buttons = await two.$$eval(".tool button.approve", (nodes) => nodes.length);
  seen.second_tab_after = await cards(two);
  seen.second_tab_texts = await assistantTexts(two);
  await shot(two, "second-tab-after-decision");
  await two.close();

  // 3. A reload in the middle of a long answer resumes it without loss.
  await ask(one, "tell me a long story");
  await one.waitForFunction(() => {
    const texts = [...document.querySelectorAll(".msg.assistant .text")];
    return texts.length && texts[texts.length - 1].textContent.split(" ").length > 20;
  });
  seen.before_reload = (await assistantTexts(one)).at(-1);
  await shot(one, "mid-stream");
  await one.reload();
  await one.waitForSelector("#stop:not([hidden])");
  await idle(one);
  seen.after_reload = (await assistantTexts(one)).at(-1);
  await shot(one, "resumed-after-reload");
  const stored = await (await fetch(`${BASE}/api/conversations/${seen.conversation}`)).json();
  seen.stored_last = stored.messages.at(-1);
} catch (error) {
  seen.failure = String(error.stack || error);
  for (const page of context.pages()) {
    seen.failure += `\n--- page ${page.url()} status: ${await page.textContent("#status").catch(() => "?")}`;
    seen.failure += `\n${(await page.innerHTML("#messages").catch(() => "?")).slice(-2000)}`;
    await shot(page, "failure").catch(() => null);
  }
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(seen));
