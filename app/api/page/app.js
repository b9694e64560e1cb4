// chat-bff's built-in page: plain JavaScript, no build step, nothing from a CDN.
// It uses only the public API: conversations, messages (202 + EventSource), approvals,
// cancel. A reload resumes the conversation's active run by replaying it from the start.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { conversation: null, run: null, source: null, cards: new Map(), text: null };

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
  location.hash = id;
  const detail = await api("GET", `/api/conversations/${encodeURIComponent(id)}`);
  $("messages").replaceChildren();
  for (const message of detail.messages) renderMessage(message);
  for (const li of $("conversations").children) li.classList.toggle("active", li.dataset.id === id);
  await showPendingApprovals();
  if (detail.active_run_id) {
    status("Resuming the answer in progress…");
    await follow(detail.active_run_id, null);
  } else {
    status("");
  }
}

// -- rendering ---------------------------------------------------------------------

function partsOf(message) {
  if (typeof message.content === "string") return [{ type: "text", data: { text: message.content } }];
  return message.content || [];
}

function renderMessage(message) {
  const box = element("div", `msg ${message.role}`);
  for (const part of partsOf(message)) {
    if (part.type === "text" && message.role === "user") box.append(element("div", "bubble", part.data.text));
    else if (part.type === "text") box.append(element("div", "text", part.data.text));
    else if (part.type === "tool") box.append(card(part));
  }
  const note = message.metadata && (message.metadata.note || message.metadata.refusal);
  if (note) box.append(element("div", "note", note));
  $("messages").append(box);
  scrollDown();
  return box;
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
      if (decided.part) card(decided.part);
      actions.remove();
      node.append(element("div", "decided", decision === "approve" ? "Approved" : "Rejected"));
      if (decided.run_id && decided.run_id !== state.run) await follow(decided.run_id, null);
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

// -- a run's events ----------------------------------------------------------------

async function eventsUrl(runId, streamToken) {
  let url = `/api/conversations/${encodeURIComponent(state.conversation)}/runs/${encodeURIComponent(runId)}/events`;
  let minted = streamToken;
  if (!minted && token()) minted = (await api("POST", "/api/stream-tokens", { run_id: runId })).token;
  if (minted) url += `?token=${encodeURIComponent(minted)}`;
  return url;
}

async function follow(runId, streamToken) {
  closeStream();
  state.run = runId;
  const box = element("div", "msg assistant");
  $("messages").append(box);
  state.text = null;
  const source = new EventSource(await eventsUrl(runId, streamToken));
  state.source = source;
  setRunning(true);
  const on = (name, handler) =>
    source.addEventListener(name, (event) => {
      if (state.source === source) handler(JSON.parse(event.data), box);
    });
  on("run_start", () => status("Answering…"));
  on("text_delta", (data) => appendText(box, data.delta));
  on("thinking_delta", () => status("Thinking…"));
  on("tool_start", (data) => { box.append(card(data.part)); state.text = null; });
  on("tool_args_delta", () => status("Preparing a tool call…"));
  on("tool_end", (data) => card(data.part));
  on("tool_error", (data) => card(data.part));
  on("confirm_required", (data) => {
    const node = card(data.part);
    if (!node.isConnected) box.append(node);
    if (data.kind === "approval" && data.approval_id) askApproval(node, data.approval_id, data.summary);
    else node.append(element("div", "note", "Waiting for the client to answer this tool call."));
  });
  on("run_end", (data) => {
    const why = data.error ? ` (${data.error.message})` : "";
    status(data.status === "completed" ? "" : `Run ${data.status}${why}`);
    finish();
    loadConversations();
  });
  source.addEventListener("error", (event) => {
    if (state.source !== source) return;
    if (event.data) {
      const data = JSON.parse(event.data);
      status(`Error: ${data.message || data.code || "the run failed"}`);
    } else if (source.readyState === EventSource.CLOSED) {
      finish();
    } else {
      status("Connection lost, reconnecting…"); // EventSource resumes with Last-Event-ID
    }
  });
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
  setRunning(false);
}

function finish() {
  closeStream();
  state.run = null;
}

function setRunning(running) {
  $("stop").hidden = !running;
  $("send").disabled = running;
}

// -- the composer ------------------------------------------------------------------

async function send(event) {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text) return;
  if (!state.conversation) await newConversation();
  renderMessage({ role: "user", content: text });
  $("input").value = "";
  try {
    const started = await api("POST", `/api/conversations/${encodeURIComponent(state.conversation)}/messages`, { content: text });
    await follow(started.run_id, started.stream_token);
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
