// chat-bff's built-in page: plain JavaScript, no build step, nothing from a CDN.
// It uses only the public API: conversations, messages (202), one EventSource per open
// conversation (GET /api/conversations/{id}/events: every message sent and every run as
// it happens, and cards decided anywhere), approvals, cancel. A second tab shows the same
// messages, runs and cards live; a reload reads the run in progress from its start.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  conversation: null, run: null, source: null, cards: new Map(), boxes: new Map(), box: null,
  text: null, queue: [], ready: false, pumping: false,
};

function token() {
  return sessionStorage.getItem("chatbff.token") || "";
}

async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (token()) headers.authorization = `Bearer ${token()}`;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? `${data.error.code}: ${data.error.message}` : response.statusText;
    throw new Error(message);
  }
  return data;
}

function status(text) {
  $("status").textContent = text || "";
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// -- conversations -----------------------------------------------------------------

async function loadConversations() {
  const page = await api("GET", "/api/conversations?limit=50");
  const list = $("conversations");
  list.replaceChildren();
  for (const item of page.data) {
    const li = element("li", item.id === state.conversation ? "active" : "", item.title || "New chat");
    li.dataset.id = item.id;
    li.addEventListener("click", () => openConversation(item.id));
    list.append(li);
  }
}

async function newConversation() {
  const created = await api("POST", "/api/conversations", {});
  await openConversation(created.id);
  await loadConversations();
}

async function openConversation(id) {
  closeStream();
  state.conversation = id;
  state.cards.clear();
  state.boxes.clear();
  location.hash = id;
  // Follow first (placed by the server), then read: whatever happens in between arrives
  // on the stream, held back until the stored messages are on the page.
  await follow(id);
  const detail = await api("GET", `/api/conversations/${encodeURIComponent(id)}`);
  $("messages").replaceChildren();
  for (const message of detail.messages) renderMessage(message);
  for (const li of $("conversations").children) li.classList.toggle("active", li.dataset.id === id);
  await showPendingApprovals();
  status(detail.active_run_id ? "Resuming the answer in progress…" : "");
  state.ready = true;
  pump();
}

// -- rendering ---------------------------------------------------------------------

function partsOf(message) {
  if (typeof message.content === "string") return [{ type: "text", data: { text: message.content } }];
  return message.content || [];
}

function renderMessage(message) {
  const box = element("div", `msg ${message.role}`);
  if (message.id) state.boxes.set(message.id, box);
  for (const part of partsOf(message)) {
    if (part.type === "text" && message.role === "user") box.append(element("div", "bubble", part.data.text));
    else if (part.type === "text") box.append(element("div", "text", part.data.text));
    else if (part.type === "tool") box.append(card(part));
  }
  const note = message.metadata && (message.metadata.note || message.metadata.refusal);
  if (note) box.append(element("div", "note", note));
  if (message.metadata && message.metadata.status === "incomplete") markCut(box, message.metadata.reason);
  $("messages").append(box);
  scrollDown();
  return box;
}

// An answer cut short stays as far as it got, marked: stopped by a person, or cut by a
// restart or a failure. Not an error of the page, and the same after a reload.
const CUT = { cancelled: "Stopped.", interrupted: "Interrupted: the service restarted." };

function markCut(box, reason) {
  if (!box || box.querySelector(".cut")) return;
  box.classList.add(reason === "cancelled" ? "stopped" : "cut-short");
  box.append(element("div", "note cut", CUT[reason] || "Cut short."));
}

function card(part) {
  const node = state.cards.get(part.id) || element("div", "tool");
  state.cards.set(part.id, node);
  const data = part.data || {};
  node.dataset.status = data.status || "loading";
  node.dataset.toolCallId = part.id;
  const head = element("div", "head");
  head.append(element("span", "name", data.toolName || "tool"), element("span", "state", data.status || "loading"));
  const children = [head];
  if (data.args && Object.keys(data.args).length) children.push(element("pre", "args", JSON.stringify(data.args, null, 1)));
  if (data.bodyContent) children.push(element("pre", "body", data.bodyContent));
  else if (data.result !== undefined && data.result !== null) children.push(element("pre", "result", JSON.stringify(data.result, null, 1)));
  node.replaceChildren(...children);
  return node;
}

function askApproval(node, approvalId, summary) {
  const actions = element("div", "actions");
  const approve = element("button", "approve", "Approve");
  const reject = element("button", "reject", "Reject");
  const decide = async (decision) => {
    approve.disabled = reject.disabled = true;
    try {
      const decided = await api("POST", `/api/approvals/${encodeURIComponent(approvalId)}`, { decision });
      if (decided.part) card(decided.part); // the follow stream says the same, in every tab
      actions.remove();
    } catch (error) {
      actions.replaceChildren(element("span", "note", error.message));
    }
  };
  approve.addEventListener("click", () => decide("approve"));
  reject.addEventListener("click", () => decide("reject"));
  if (summary) node.append(element("div", "summary", summary));
  actions.append(approve, reject);
  node.append(actions);
}

async function showPendingApprovals() {
  const inbox = await api("GET", "/api/approvals");
  for (const item of inbox.data) {
    if (item.conversation_id !== state.conversation) continue;
    const node = state.cards.get(item.tool_call_id);
    if (node && !node.querySelector(".actions")) askApproval(node, item.id, item.summary);
  }
}

function scrollDown() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

// -- the conversation's events ------------------------------------------------------

async function eventsUrl(conversationId) {
  const path = `/api/conversations/${encodeURIComponent(conversationId)}/events`;
  if (!token()) return path;
  const minted = await api("POST", "/api/stream-tokens", { path });
  return `${path}?token=${encodeURIComponent(minted.token)}`;
}

const EVENTS = ["follow", "message_added", "run_start", "text_delta", "thinking_delta", "tool_start", "tool_args_delta",
  "tool_end", "tool_error", "confirm_required", "part_update", "run_end"];

async function follow(conversationId) {
  state.ready = false;
  state.queue = [];
  const source = new EventSource(await eventsUrl(conversationId));
  state.source = source;
  for (const name of EVENTS) {
    source.addEventListener(name, (event) => {
      if (state.source !== source) return;
      state.queue.push([name, JSON.parse(event.data)]);
      if (state.ready) pump();
    });
  }
  source.addEventListener("error", (event) => {
    if (state.source !== source) return;
    if (event.data) {
      const data = JSON.parse(event.data);
      status(`Error: ${data.message || data.code || "the run failed"}`);
    } else {
      status("Connection lost, reconnecting…"); // EventSource resumes with Last-Event-ID
    }
  });
  // Done once the server has placed this reader (its `follow` frame): every change after
  // that comes on the stream, so the stored conversation read next misses nothing. A
  // source only created may be placed later, after a change that read did not see.
  await new Promise((placed) => {
    source.addEventListener("follow", placed, { once: true });
    source.addEventListener("error", placed, { once: true });
  });
}

// Events are handled one at a time, in order, even when one has to read the server first.
async function pump() {
  if (state.pumping) return;
  state.pumping = true;
  try {
    while (state.ready && state.queue.length) {
      const [name, data] = state.queue.shift();
      try {
        await handle(name, data);
      } catch (error) {
        status(error.message);
      }
    }
  } finally {
    state.pumping = false;
  }
}

async function handle(name, data) {
  if (name === "follow") {
    if (data.active_run_id) setRunning(true, data.active_run_id);
  } else if (name === "message_added") {
    // A person's message, from this tab or another, before the run that answers it.
    if (!state.boxes.has(data.message.id)) renderMessage(data.message);
  } else if (name === "run_start") {
    const box = state.boxes.get(data.message_id) || element("div", "msg assistant");
    box.replaceChildren(); // a run replayed from its start rebuilds its message
    state.boxes.set(data.message_id, box);
    $("messages").append(box);
    state.box = box;
    state.text = null;
    setRunning(true, data.run_id);
    status("Answering…");
  } else if (name === "text_delta") {
    appendText(state.box, data.delta);
  } else if (name === "thinking_delta") {
    status("Thinking…");
  } else if (name === "tool_start") {
    state.box.append(card(data.part));
    state.text = null;
  } else if (name === "tool_args_delta") {
    status("Preparing a tool call…");
  } else if (name === "tool_end" || name === "tool_error" || name === "part_update") {
    card(data.part); // upsert by id: a card decided in another tab changes here too
  } else if (name === "confirm_required") {
    const node = card(data.part);
    if (!node.isConnected) state.box.append(node);
    if (data.kind === "approval" && data.approval_id) askApproval(node, data.approval_id, data.summary);
    else node.append(element("div", "note", "Waiting for the client to answer this tool call."));
  } else if (name === "run_end") {
    const why = data.error ? ` (${data.error.message})` : "";
    if (data.status === "cancelled" || data.status === "interrupted") markCut(state.box, data.status);
    if (data.status === "cancelled") status("Stopped.");
    else status(data.status === "completed" ? "" : `Run ${data.status}${why}`);
    setRunning(false, null);
    loadConversations();
  }
}

function appendText(box, delta) {
  if (!state.text) {
    state.text = element("div", "text", "");
    box.append(state.text);
  }
  state.text.textContent += delta;
  scrollDown();
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
  state.ready = false;
  state.queue = [];
  setRunning(false, null);
}

function setRunning(running, runId) {
  state.run = runId;
  $("stop").hidden = !running;
  $("send").disabled = running;
}

// -- the composer ------------------------------------------------------------------

async function send(event) {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text) return;
  if (!state.conversation) await newConversation();
  $("input").value = "";
  try {
    // The message (`message_added`) and the run come back on the conversation's stream.
    await api("POST", `/api/conversations/${encodeURIComponent(state.conversation)}/messages`, { content: text });
  } catch (error) {
    status(error.message);
  }
}

async function stop() {
  if (!state.run) return;
  await api("POST", `/api/conversations/${encodeURIComponent(state.conversation)}/runs/${encodeURIComponent(state.run)}/cancel`);
}

function start() {
  $("token").value = token();
  $("token").addEventListener("change", () => {
    sessionStorage.setItem("chatbff.token", $("token").value.trim());
    loadConversations().catch((error) => status(error.message));
  });
  $("new").addEventListener("click", () => newConversation().catch((error) => status(error.message)));
  $("composer").addEventListener("submit", send);
  $("stop").addEventListener("click", () => stop().catch((error) => status(error.message)));
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  loadConversations()
    .then(() => (location.hash.length > 1 ? openConversation(location.hash.slice(1)) : null))
    .catch((error) => status(error.message));
}

start();
