// Drives chat-bff's built-in page (GET /) in Debian's Chromium like a person would: a
// server-tool turn, an approval decided in the page while a second tab looks on (and sees
// the decision, then a question asked in the first tab, live, without reloading), a reload in the middle of a long answer, and Stop
// pressed in the middle of another. Prints what it saw as JSON; screenshots of each step go
// to SCREENSHOTS (a directory). Usage: node builtin_page.mjs BASE_URL
import { count, run, texts, untilNewText, untilText, untilWords } from "./pagekit.mjs";

const ANSWERS = ".msg.assistant .text";

async function ask(page, text) {
  await page.fill("#input", text);
  await page.click("#send");
}

const idle = (page) => page.waitForFunction(() => document.querySelector("#stop").hidden);
const cards = (page) =>
  page.$$eval(".tool", (nodes) => nodes.map((n) => ({ id: n.dataset.toolCallId, status: n.dataset.status, name: n.querySelector(".name").textContent })));
const untilCard = (page, name, status) =>
  page.waitForFunction(([n, s]) =>
    [...document.querySelectorAll(".tool")].some((c) => c.querySelector(".name").textContent === n && c.dataset.status === s), [name, status]);
// Every assistant message as a person sees it: its text and the mark under a cut one.
const answers = (page) =>
  page.$$eval(".msg.assistant", (boxes) =>
    boxes.map((b) => ({
      text: [...b.querySelectorAll(".text")].map((n) => n.textContent).join(""),
      mark: b.querySelector(".note.cut")?.textContent ?? null,
      stopped: b.classList.contains("stopped"),
    })),
  );
const pageState = async (page) => ({
  status: await page.textContent("#status"),
  stop_hidden: await page.$eval("#stop", (n) => n.hidden),
  send_disabled: await page.$eval("#send", (n) => n.disabled),
});

await run(process.argv[2], { timeout: 30_000 }, async ({ seen, base, tab, shot, stored }) => {
  const one = await tab("tab1");
  await one.goto(`${base}/`);
  await one.click("#new");
  await one.waitForFunction(() => location.hash.length > 1);
  seen.conversation = (await one.evaluate(() => location.hash)).slice(1);

  // 1. A turn with server tools: cards appear and finish.
  await ask(one, "add a Person node named Ada Lovelace and connect her to the Analytical Engine with a designed relation");
  await one.waitForSelector(".tool[data-status='success']");
  await idle(one);
  seen.tools_turn = { cards: await cards(one), texts: await texts(one, ANSWERS) };
  await shot(one, "server-tools");

  // 2. A tool that needs a human: the card asks, a second tab shows the same card.
  await ask(one, "delete Ada Lovelace");
  await one.waitForSelector(".tool[data-status='waitingConfirmation'] button.approve");
  await idle(one);
  await shot(one, "approval-asked");
  const two = await tab("tab2");
  await two.goto(`${base}/#${seen.conversation}`);
  await two.waitForSelector(".tool[data-status='waitingConfirmation'] button.approve");
  seen.second_tab_before = await cards(two);
  await shot(two, "second-tab-sees-the-approval");
  await one.click(".tool[data-status='waitingConfirmation'] button.approve");
  await untilCard(one, "delete_node", "success");
  // The run the decision resumed arrives on the follow stream (run_start, text, run_end).
  await untilText(one, ANSWERS, "The tool card shows what happened");
  await idle(one);
  seen.after_approval = { cards: await cards(one), texts: await texts(one, ANSWERS) };
  await shot(one, "approved");
  // No reload: the second tab hears the decision and the run it resumed on the
  // conversation's follow stream.
  seen.second_tab_reloads = 0;
  two.on("framenavigated", () => { seen.second_tab_reloads += 1; });
  await untilCard(two, "delete_node", "success");
  await untilText(two, ANSWERS, "The tool card shows what happened");
  seen.second_tab_buttons = await two.$$eval(".tool button.approve", (nodes) => nodes.length);
  seen.second_tab_after = await cards(two);
  seen.second_tab_texts = await texts(two, ANSWERS);
  await shot(two, "second-tab-after-decision");
  // A question asked in the first tab shows in the second (message_added on the follow
  // stream), before the answer to it.
  let before = await count(two, ".msg");
  await ask(one, "hello from the first tab");
  await untilNewText(two, ".msg", "Hello! I am chat-bff's offline scripted model", before + 1);
  seen.second_tab_new = await two.$$eval(".msg", (boxes, b) => boxes.slice(b).map((m) => ({
    role: m.classList.contains("user") ? "user" : "assistant", text: m.textContent,
  })), before);
  await idle(one);
  await idle(two);
  await shot(two, "second-tab-sees-the-question");
  await two.close();

  // 3. A reload in the middle of a long answer resumes it without loss.
  before = await count(one, ".msg.assistant");
  await ask(one, "tell me a long story");
  await untilWords(one, ".msg.assistant", 20, before);
  seen.before_reload = (await texts(one, ANSWERS)).at(-1);
  await shot(one, "mid-stream");
  await one.reload();
  await one.waitForSelector("#stop:not([hidden])");
  await idle(one);
  seen.after_reload = (await texts(one, ANSWERS)).at(-1);
  await shot(one, "resumed-after-reload");
  seen.stored_last = (await stored(seen.conversation)).messages.at(-1);

  // 4. Stop in the middle of a long answer: the text stays as far as it got, marked
  // stopped, and the page is idle and usable at once.
  before = await count(one, ".msg.assistant");
  await ask(one, "tell me a saga");
  await untilWords(one, ".msg.assistant", 20, before);
  await shot(one, "before-stop");
  await one.click("#stop");
  await idle(one);
  await one.waitForSelector(".msg.assistant.stopped");
  seen.stopped = { answer: (await answers(one)).at(-1), page: await pageState(one) };
  await shot(one, "stopped");
  // Usable: the next question gets its answer, and the stopped one has not moved meanwhile.
  before = await count(one, ".msg.assistant");
  await ask(one, "hello");
  await untilNewText(one, ".msg.assistant", "Hello! I am chat-bff's offline scripted model", before);
  await idle(one);
  seen.after_stop = { answers: await answers(one), page: await pageState(one) };
  await shot(one, "usable-after-stop");
  await one.reload();
  await one.waitForSelector(".msg.assistant.stopped");
  seen.stopped_reloaded = { answers: await answers(one), page: await pageState(one) };
  await shot(one, "stopped-after-reload");
  seen.stored_after_stop = (await stored(seen.conversation)).messages.slice(-4, -2);
}, async (page) => `status: ${await page.textContent("#status")}\n${(await page.innerHTML("#messages")).slice(-2000)}`);
