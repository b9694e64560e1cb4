// A client written against the types openapi-typescript generates from openapi/openapi.json
// (gen/api.d.ts): it creates a conversation, sends messages, reads each run's native SSE
// stream as the typed `RunEvent` union (switching on the event names, exhaustively),
// decides an approval and lists. `tsc` must accept it; run, it prints a JSON summary.
//
// usage: node build/src/flow.js <base_url> <bearer token>
import type { components, operations } from "../gen/api.js";

type Schemas = components["schemas"];
type RunEvent = Schemas["RunEvent"];
type Frame = operations["streamRunEvents"]["responses"][200]["content"]["text/event-stream"];
type Started = operations["sendMessage"]["responses"][202]["content"]["application/json"];

declare const process: { argv: string[] }; // Node's, without @types/node
const [baseUrl, token] = process.argv.slice(2);
if (!baseUrl || !token) throw new Error("usage: flow.js <base_url> <token>");
const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(baseUrl + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The frames of an SSE body, as the document types them (heartbeat comments skipped). */
async function* frames(response: Response): AsyncGenerator<Frame> {
  if (!response.body) throw new Error("no body");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const frame: Partial<Frame> = {};
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "id") frame.id = value;
        else if (field === "event") frame.event = value as Frame["event"];
      }
      if (data.length) yield { ...frame, data: data.join("\n") };
    }
  }
}

interface Seen {
  events: string[];
  text: string;
  tools: string[];
  updates: string[];
  approvalId: string | null;
  status: Schemas["RunEnd"]["status"] | null;
  messageParts: number;
}

/** Reads a run to its `run_end`, every event typed by the generated union. */
async function readRun(eventsUrl: string): Promise<Seen> {
  const response = await fetch(baseUrl + eventsUrl, {
    headers: { ...headers, Accept: "text/event-stream" },
  });
  if (response.status !== 200) throw new Error(`events: ${response.status}`);
  const seen: Seen = { events: [], text: "", tools: [], updates: [], approvalId: null, status: null, messageParts: 0 };
  for await (const frame of frames(response)) {
    const event = JSON.parse(frame.data) as RunEvent;
    if (frame.event !== event.type) throw new Error(`frame ${frame.event} carries ${event.type}`);
    seen.events.push(event.type);
    switch (event.type) {
      case "run_start":
        break;
      case "text_delta":
        seen.text += event.delta;
        break;
      case "thinking_delta":
      case "tool_args_delta":
        break;
      case "tool_start":
        break;
      case "tool_end":
      case "tool_error":
        seen.tools.push(`${event.part.data.toolName}:${event.part.data.status}`);
        break;
      case "confirm_required":
        seen.tools.push(`${event.part.data.toolName}:${event.part.data.status}`);
        seen.approvalId = event.approval_id ?? null;
        break;
      case "part_update":
        // A card of an earlier message changed (an approval decided, proposals applied).
        seen.updates.push(`${event.part.data.toolName}:${event.cause}`);
        break;
      case "step_reset": {
        // Failover after the first byte: the message as it stands replaces what streamed.
        const content = event.message.content;
        seen.text = typeof content === "string"
          ? content
          : content.map((part) => (part.type === "text" ? part.data.text : "")).join("");
        break;
      }
      case "message_end":
        seen.messageParts = typeof event.message.content === "string" ? 1 : event.message.content.length;
        break;
      case "error":
        throw new Error(`${event.code}: ${event.message}`);
      case "run_end":
        seen.status = event.status;
        return seen;
      default: {
        const unhandled: never = event;
        throw new Error(`unhandled event ${JSON.stringify(unhandled)}`);
      }
    }
  }
  throw new Error("the stream ended before run_end");
}

const create: Schemas["ConversationCreate"] = { title: "From TypeScript" };
const conversation = await call<Schemas["ConversationOut"]>("POST", "/api/conversations", create);
const send = async (content: string): Promise<Started> => {
  const body: Schemas["SendMessage"] = { content };
  return call<Started>("POST", `/api/conversations/${conversation.id}/messages`, body);
};

const first = await readRun(
  (await send("add a Person node named Ada Lovelace and connect her to the Analytical Engine with a designed relation")).events_url,
);
const second = await readRun((await send("delete Ada Lovelace")).events_url);
if (!second.approvalId) throw new Error("no approval was asked for");
const decision: Schemas["DecisionIn"] = { decision: "approve" };
const decided = await call<Schemas["DecisionOut"]>("POST", `/api/approvals/${second.approvalId}`, decision);
const resumed = decided.events_url ? await readRun(decided.events_url) : null;
const pending = await call<Schemas["ApprovalList"]>("GET", "/api/approvals");
const listed = await call<Schemas["ConversationList"]>("GET", "/api/conversations");

console.log(
  JSON.stringify({
    conversation: conversation.id,
    first,
    second,
    decided: decided.approval.status,
    resumed,
    pending: pending.data.length,
    listed: listed.data.map((c) => c.title),
  }),
);
