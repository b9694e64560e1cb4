// Drives a live chat-bff with the Vercel AI SDK's own chat client (AbstractChat, the core
// of useChat, over DefaultChatTransport) of one `ai` major, and prints one JSON line with
// what each turn produced.
//   node live.mjs <major> <baseUrl> <longPrompt> <adaPrompt>

const [major, base, LONG, ADA] = process.argv.slice(2);
const ai = await import(`ai${major}`);
const api = `${base}/api/ui/chat?v=${major}`;
const v6 = Number(major) >= 6;

// The React hook keeps its state in React; this is the same contract in plain memory.
class MemoryState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage = (message) => { this.messages = this.messages.concat(message); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (value) => structuredClone(value);
}

// The transport as shipped, recording the chunk types of every response it parses.
class RecordingTransport extends ai.DefaultChatTransport {
  constructor(options) {
    super(options);
    this.responses = [];
  }
  processResponseStream(stream) {
    const seen = [];
    this.responses.push(seen);
    return super.processResponseStream(stream).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          seen.push(chunk.type);
          controller.enqueue(chunk);
        },
      }),
    );
  }
}

let serial = 0;
let debugChat = null;
function newChat({ id, messages, ...options } = {}) {
  const transport = new RecordingTransport({ api });
  const chat = new ai.AbstractChat({
    id: id ?? `chat-v${major}-${Date.now()}-${serial++}`,
    transport,
    state: new MemoryState(messages),
    ...options,
  });
  chat.transport = transport;
  debugChat = chat;
  return chat;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(debugChat ? summary(debugChat) : null)}`);
    await sleep(20);
  }
}
const textOf = (message) =>
  (message?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
const lastAssistant = (chat) => [...chat.messages].reverse().find((m) => m.role === 'assistant');
function summary(chat) {
  return {
    id: chat.id,
    status: chat.status,
    error: chat.error ? String(chat.error.message ?? chat.error) : null,
    messages: chat.messages,
    responses: chat.transport.responses,
  };
}

const out = {};

// 1. A text turn.
{
  const chat = newChat();
  await chat.sendMessage({ text: 'hello' });
  out.text = summary(chat);
}

// 2. A server tool turn (the offline demo adds two nodes and connects them).
{
  const chat = newChat();
  await chat.sendMessage({ text: ADA });
  out.tools = summary(chat);
}

// 3. An approval turn: v6+ answer the tool-approval-request with the client's own
//    addToolApprovalResponse and sendAutomaticallyWhen; v5 sees a data-approval part.
{
  const options = v6 ? { sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses } : {};
  const chat = newChat(options);
  await chat.sendMessage({ text: ADA });
  await chat.sendMessage({ text: 'delete Ada Lovelace' });
  const asked = structuredClone(lastAssistant(chat));
  if (v6) {
    const part = asked.parts.find((p) => p.state === 'approval-requested');
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await until(() => chat.transport.responses.length === 3 && chat.status === 'ready', 'the continuation');
  }
  out.approval = { ...summary(chat), asked };
}

// 4. Resume mid-stream: the first tab drops after some text (a client-side abort: the
//    run goes on); a reloaded tab (only the user message, as the server has it) resumes.
{
  const first = newChat();
  const sending = first.sendMessage({ text: LONG });
  await until(() => textOf(lastAssistant(first)).length > 40, 'some streamed text');
  const seenBeforeDrop = textOf(lastAssistant(first));
  await first.stop();
  await sending;
  const reloaded = newChat({ id: first.id, messages: [first.messages[0]] });
  await reloaded.resumeStream();
  out.resume = { seenBeforeDrop, reloaded: summary(reloaded) };
  if (major === '7') {
    // v7 knows the resumed stream is a replay: the same tab may resume too.
    const again = newChat({ id: `${first.id}-same` });
    const sending2 = again.sendMessage({ text: LONG });
    await until(() => textOf(lastAssistant(again)).length > 40, 'some streamed text');
    await again.stop();
    await sending2;
    await again.resumeStream();
    out.resumeSameTab = summary(again);
  }
}

// 5. Stop: the explicit endpoint cancels the run; the open stream ends with `abort`.
{
  const chat = newChat();
  const sending = chat.sendMessage({ text: LONG });
  await until(() => textOf(lastAssistant(chat)).length > 40, 'some streamed text');
  const stopped = await fetch(`${base}/api/ui/chat/${encodeURIComponent(chat.id)}/stop`, { method: 'POST' });
  const stopBody = await stopped.json();
  await sending;
  const resumeAfter = await fetch(`${base}/api/ui/chat/${encodeURIComponent(chat.id)}/stream?v=${major}`);
  out.stop = { ...summary(chat), stopStatus: stopped.status, stopBody, resumeAfterStatus: resumeAfter.status };
}

console.log(JSON.stringify(out));
