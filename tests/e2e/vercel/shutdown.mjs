// One chat turn of a long answer through ai's AbstractChat + DefaultChatTransport; prints
// "streaming" once text arrives (the test then stops the service), then one JSON line.
//   node shutdown.mjs <major> <baseUrl> <longPrompt>
const [major, base, LONG] = process.argv.slice(2);
const ai = await import(`ai${major}`);

class MemoryState {
  constructor() { this.messages = []; this.status = 'ready'; this.error = undefined; }
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; };
  snapshot = (v) => structuredClone(v);
}
const seen = [];
class RecordingTransport extends ai.DefaultChatTransport {
  processResponseStream(stream) {
    return super.processResponseStream(stream).pipeThrough(new TransformStream({
      transform(chunk, controller) { seen.push(chunk); controller.enqueue(chunk); },
    }));
  }
}
const chat = new ai.AbstractChat({
  id: `shutdown-${Date.now()}`,
  transport: new RecordingTransport({ api: `${base}/api/ui/chat?v=${major}` }),
  state: new MemoryState(),
});
const sending = chat.sendMessage({ text: LONG });
while (!seen.some((c) => c.type === 'text-delta')) await new Promise((r) => setTimeout(r, 20));
console.log('streaming');
await sending;
console.log(JSON.stringify({
  id: chat.id,
  status: chat.status,
  error: chat.error ? String(chat.error.message) : null,
  chunks: seen,
}));
