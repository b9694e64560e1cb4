// Replays recorded chat-bff UI message streams through the real `ai` client pieces of one
// major version: DefaultChatTransport's response parsing (the zod chunk schema) and
// readUIMessageStream (the strict stream processor, terminateOnError). Prints one JSON
// line: {file: {ok, error?, message?}}.
//   node replay.mjs <major> <file.sse>...
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const major = process.argv[2];
const files = process.argv.slice(3);
const ai = await import(`ai${major}`);

function streamOf(bytes) {
  return new ReadableStream({
    start(controller) {
      // Odd-sized slices, so frames arrive split as they do over a socket.
      for (let i = 0; i < bytes.length; i += 97) controller.enqueue(bytes.subarray(i, i + 97));
      controller.close();
    },
  });
}

// The message a client holds when a continuation arrives: the calls it decided.
function heldMessage() {
  const parts = ['call_a1', 'call_a2', 'call_a3'].map((id) => ({
    type: 'dynamic-tool',
    toolName: 'delete_node',
    toolCallId: id,
    state: Number(major) >= 6 ? 'approval-responded' : 'input-available',
    input: { id },
    ...(Number(major) >= 6 ? { approval: { id: `appr_${id}`, approved: id !== 'call_a2' } } : {}),
  }));
  return { id: 'msg_held', role: 'assistant', parts };
}

const out = {};
for (const file of files) {
  const name = basename(file, '.sse');
  const transport = new ai.DefaultChatTransport({ api: 'http://unused.invalid' });
  const chunks = transport.processResponseStream(streamOf(readFileSync(file)));
  const message = name.startsWith('continuation') ? heldMessage() : undefined;
  let last;
  try {
    for await (const snapshot of ai.readUIMessageStream({ stream: chunks, message, terminateOnError: true })) {
      last = snapshot;
    }
    out[name] = { ok: true, message: last };
  } catch (error) {
    out[name] = { ok: false, error: String(error && error.message ? error.message : error) };
  }
}
console.log(JSON.stringify(out));
