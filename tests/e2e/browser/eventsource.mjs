// A plain EventSource page in Debian's Chromium follows a chat-bff run, resumes after a
// network drop and stops after run_end. Usage: node eventsource.mjs http://127.0.0.1:PORT [message]
//
// How the drop is provoked: the browser talks to chat-bff through a byte-for-byte TCP relay
// on another loopback port (below), and after a few text_delta events the relay resets every
// connection, as a lost network would. Chromium's EventSource then reconnects by itself and
// sends Last-Event-ID; nothing in the page does it. (Playwright's context.setOffline(true)
// was tried first: Chromium 156 keeps an already-open event stream flowing while "offline",
// so it provokes nothing.) The relay also reads each request's head, so the test sees the
// Last-Event-ID header the browser actually sent.
//
// The page is same-origin with the API without adding anything to the app: page.route
// fulfils http://127.0.0.1:RELAY/__test_page.html with PAGE, and every fetch and the
// EventSource go to that origin, relayed to chat-bff (no CORS involved). After run_end the
// server closes the stream, the EventSource reconnects once more, and the 204 must leave it
// CLOSED (readyState 2).
//
// Prints one JSON object on stdout (events, requests, timings) for the Python test.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.argv[2];
const content = process.argv[3] ?? "hello";
if (!base || !base.startsWith("http://127.0.0.1:")) {
  console.error("usage: node eventsource.mjs http://127.0.0.1:PORT [message]");
  process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const target = new URL(base);
const t0 = Date.now();
const out = { requests: [], responses: [], drops: [], timings: {} };
const mark = (name) => (out.timings[name] = Date.now() - t0);

// The relay: browser <-> 127.0.0.1:RELAY <-> chat-bff, with a switch that resets them all.
const pairs = new Set();
const relay = createServer((client) => {
  const upstream = connect(Number(target.port), "127.0.0.1");
  const pair = { client, upstream };
  pairs.add(pair);
  const end = () => {
    pairs.delete(pair);
    client.destroy();
    upstream.destroy();
  };
  client.on("data", (chunk) => {
    // Request heads (HTTP/1.1, plain text): note each events request and its Last-Event-ID.
    const text = chunk.toString("latin1");
    for (const m of text.matchAll(/^GET (\S*\/events\S*) HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/gm)) {
      const id = /^last-event-id:[ \t]*(.*)$/im.exec(m[2]);
      out.requests.push({ path: m[1], last_event_id: id ? id[1].trim() : null, t: Date.now() - t0 });
    }
    upstream.write(chunk);
  });
  upstream.on("data", (chunk) => client.write(chunk));
  client.on("close", end);
  upstream.on("close", end);
  client.on("error", end);
  upstream.on("error", end);
});
const dropAll = () => {
  const n = pairs.size;
  for (const { client, upstream } of [...pairs]) {
    client.resetAndDestroy();
    upstream.destroy();
  }
  pairs.clear();
  return n;
};
await new Promise((ok) => relay.listen(0, "127.0.0.1", ok));
const origin = `http://127.0.0.1:${relay.address().port}`;
const PAGE_URL = `${origin}/__test_page.html`;
const NAMES = [
  "run_start",
  "text_delta",
  "thinking_delta",
  "tool_start",
  "tool_args_delta",
  "confirm_required",
  "tool_end",
  "tool_error",
  "message_end",
  "run_end",
  "error",
];

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>chat-bff EventSource check</title>
<pre id="log"></pre>
<script>
  const NAMES = ${JSON.stringify(NAMES)};
  window.seen = [];      // [{id, type, data, t}] in arrival order (t: ms since load)
  window.states = [];    // [{what, readyState, t}]
  window.opens = 0;
  window.errors = 0;
  const t0 = performance.now();
  const note = (what) => window.states.push({ what, readyState: window.es.readyState, t: Math.round(performance.now() - t0) });

  window.start = async (content) => {
    const post = (url, body) => fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const conv = await (await post("/api/conversations", {})).json();
    const sent = await post("/api/conversations/" + conv.id + "/messages", { content });
    const started = await sent.json();
    const es = new EventSource(started.events_url);
    window.es = es;
    es.onopen = () => { window.opens += 1; note("open"); };
    es.onerror = () => { window.errors += 1; note("error"); };
    for (const name of NAMES) {
      es.addEventListener(name, (e) => {
        // The server's "error" frames share their name with EventSource's own connection
        // errors (a plain Event, no data): only MessageEvents are frames.
        if (!(e instanceof MessageEvent)) return;
        window.seen.push({
          id: e.lastEventId,
          type: e.type,
          data: JSON.parse(e.data),
          t: Math.round(performance.now() - t0),
        });
        document.getElementById("log").textContent += e.lastEventId + " " + e.type + "\\n";
      });
    }
    return { conversation_id: conv.id, status: sent.status, started };
  };
  window.count = (type) => window.seen.filter((e) => e.type === type).length;
</script>
`;

const userDataDir = mkdtempSync(join(tmpdir(), "chat-bff-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  timeout: 30_000,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on("console", (m) => console.error(`[page ${m.type()}] ${m.text()}`));
  page.on("pageerror", (e) => console.error(`[page error] ${e}`));
  await page.route(PAGE_URL, (route) =>
    route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: PAGE }),
  );
  page.on("response", (response) => {
    if (!response.url().includes("/events")) return;
    out.responses.push({ url: response.url(), status: response.status(), t: Date.now() - t0 });
  });
  page.on("requestfailed", (request) => {
    if (!request.url().includes("/events")) return;
    out.responses.push({
      url: request.url(),
      failed: request.failure()?.errorText ?? "failed",
      t: Date.now() - t0,
    });
  });

  await page.goto(PAGE_URL);
  out.origin = await page.evaluate(() => location.origin);
  out.start = await page.evaluate((content) => window.start(content), content);
  mark("started");

  // A few text deltas in, the network drops: every relayed connection is reset.
  await page.waitForFunction(() => window.count("text_delta") >= 3);
  const seenAtDrop = await page.evaluate(() => window.seen.map((e) => e.id));
  out.drops.push({ connections: dropAll(), last_id_seen: seenAtDrop.at(-1), t: Date.now() - t0 });
  mark("dropped");
  await page.waitForFunction(() => window.errors >= 1);
  out.ready_state_after_drop = await page.evaluate(() => window.es.readyState);
  out.seen_after_drop = await page.evaluate(() => window.seen.length);

  // Chromium reconnects on its own (default retry 3 s) with Last-Event-ID.
  await page.waitForFunction(() => window.count("run_end") >= 1, null, { timeout: 30_000 });
  mark("run_end");
  // The server closes after run_end; the EventSource reconnects, gets 204 and stops.
  await page.waitForFunction(() => window.es.readyState === 2, null, { timeout: 20_000 });
  mark("closed");
  // Nothing reconnects after CLOSED: wait past a retry period and count the requests again.
  const requestsAtClose = out.requests.length;
  await page.waitForTimeout(3_500);
  out.requests_after_closed = out.requests.length - requestsAtClose;

  Object.assign(
    out,
    await page.evaluate(() => ({
      seen: window.seen,
      states: window.states,
      opens: window.opens,
      errors: window.errors,
      final_ready_state: window.es.readyState,
    })),
  );
} finally {
  await context.close().catch(() => {});
  relay.close();
  dropAll();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
