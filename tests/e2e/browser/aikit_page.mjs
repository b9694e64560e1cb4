// Drives the AIKit example (examples/aikit-chat, built and served by `vite preview` in front of
// a live chat-bff) in Debian's Chromium like a person would: the History list, a server-tool
// turn, an approval accepted in the page while a second tab looks on, a reload in the middle
// of a long answer, and Stop pressed in the middle of another. Prints what it saw as JSON;
// screenshots of each step go to SCREENSHOTS (a directory). Usage: node aikit_page.mjs PAGE_URL
import { count, run, texts, untilNewText, untilText, untilWords } from "./pagekit.mjs";

const MESSAGE = ".g-aikit-assistant-message";
const ANSWERS = `${MESSAGE} .g-aikit-markdown-renderer`;

async function ask(page, text) {
  await page.fill("[data-qa='prompt'] textarea", text);
  await page.click("[data-qa='submit']");
}

const idle = (page) => page.waitForSelector(".page[data-status='ready']", { state: "attached" });
const card = (name, status) => `[data-qa='tool:${name}:${status}']`;
const cards = (page) =>
  page.$$eval("[data-qa^='tool:']", (nodes) =>
    nodes.map((n) => {
      const [, name, status] = n.dataset.qa.split(":");
      return { name, status, buttons: [...n.querySelectorAll("button")].map((b) => b.textContent.trim()).filter(Boolean) };
    }),
  );
// Every assistant message as a person sees it: its text and the mark under a cut one.
const answers = (page) =>
  page.$$eval(".g-aikit-assistant-message", (boxes) =>
    boxes.map((b) => ({
      text: [...b.querySelectorAll(".g-aikit-markdown-renderer")].map((n) => n.textContent.trim()).join(""),
      mark: b.querySelector("[data-qa='cut-short']")?.textContent ?? null,
    })),
  );
const pageState = async (page) => ({
  status: await page.getAttribute(".page", "data-status"),
  error_alerts: await count(page, "[class*='error-alert']"),
});

await run(process.argv[2], { viewport: { width: 1100, height: 900 }, timeout: 30_000 }, async ({ seen, base, tab, shot, stored }) => {
  const one = await tab("tab1");
  await one.goto(`${base}/`);

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
  seen.tools_turn = { cards: await cards(one), texts: await texts(one, ANSWERS) };
  await shot(one, "server-tools");

  // 3. A tool that needs a human: the card asks, a second tab shows the same card.
  await ask(one, "delete Ada Lovelace");
  await one.waitForSelector(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  await idle(one);
  seen.approval_asked = await cards(one);
  await shot(one, "approval-asked");
  const two = await tab("tab2");
  await two.goto(`${base}/#${seen.conversation}`);
  await two.waitForSelector(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  seen.second_tab_before = await cards(two);
  await shot(two, "second-tab-sees-the-approval");
  await one.click(`${card("delete_node", "waitingConfirmation")} button:has-text("Accept")`);
  await one.waitForSelector(card("delete_node", "success"));
  await untilText(one, ".g-aikit-markdown-renderer", "The tool card shows what happened");
  await idle(one);
  seen.after_approval = { cards: await cards(one), texts: await texts(one, ANSWERS) };
  await shot(one, "approved");
  // The second tab follows the conversation: it shows the decision without a reload.
  await two.waitForSelector(card("delete_node", "success"));
  seen.second_tab_after = await cards(two);
  await shot(two, "second-tab-after-decision");
  await two.close();

  // 4. A reload in the middle of a long answer resumes it without loss.
  let before = await count(one, MESSAGE);
  await ask(one, "tell me a long story");
  await untilWords(one, MESSAGE, 20, before);
  seen.before_reload = (await texts(one, ANSWERS)).at(-1);
  await shot(one, "mid-stream");
  await one.reload();
  await one.waitForSelector(".page[data-status='streaming']", { state: "attached" });
  seen.resumed_while_running = true;
  await idle(one);
  await one.waitForFunction(([s, n]) => document.querySelectorAll(s).length >= n, [MESSAGE, 3]);
  seen.after_reload = (await texts(one, ANSWERS)).at(-1);
  await shot(one, "resumed-after-reload");
  seen.stored_last = (await stored(seen.conversation)).messages.at(-1);

  // 5. Stop in the middle of a long answer (the submit button turns into Stop while an
  // answer streams): the text stays as far as it got, marked, and the page is usable.
  before = await count(one, MESSAGE);
  await ask(one, "tell me a saga");
  await untilWords(one, MESSAGE, 20, before);
  await one.waitForSelector(".page[data-status='streaming']", { state: "attached" });
  await shot(one, "before-stop");
  await one.click("[data-qa='submit']");
  await idle(one);
  await one.waitForSelector(`${MESSAGE} [data-qa='cut-short']`);
  seen.stopped = { answer: (await answers(one)).at(-1), page: await pageState(one) };
  await shot(one, "stopped");
  // Usable: the next question gets its answer, and the stopped one has not moved meanwhile.
  before = await count(one, MESSAGE);
  await ask(one, "hello");
  await untilNewText(one, MESSAGE, "Hello! I am chat-bff's offline scripted model", before);
  await idle(one);
  seen.after_stop = { answers: await answers(one), page: await pageState(one) };
  await shot(one, "usable-after-stop");
  await one.reload();
  await idle(one);
  await one.waitForSelector(`${MESSAGE} [data-qa='cut-short']`);
  seen.stopped_reloaded = { answers: await answers(one), page: await pageState(one) };
  await shot(one, "stopped-after-reload");
  seen.stored_after_stop = (await stored(seen.conversation)).messages.slice(-4, -2);
}, async (page) => `status: ${await page.getAttribute(".page", "data-status")}\n${(await page.innerText("#root")).slice(-2000)}`);
