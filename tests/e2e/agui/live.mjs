// Drives a live chat-bff with AG-UI's own client (`HttpAgent` of @ag-ui/client 1.0, which
// verifies the event order: RUN_STARTED first, content inside what was opened, nothing
// after RUN_FINISHED / RUN_ERROR, nothing open at the end) and prints one JSON line with
// what each run produced.
//   node live.mjs <baseUrl> <adaPrompt> <longPrompt>

import { HttpAgent, buildResumeArray, isInterruptExpired } from '@ag-ui/client';

const [base, ADA, LONG] = process.argv.slice(2);
const url = `${base}/api/agui`;
const PICK = {
  name: 'pick_color',
  description: 'Ask the person to pick a color.',
  parameters: { type: 'object', properties: { hint: { type: 'string' } } },
};

let serial = 0;
const newAgent = () =>
  new HttpAgent({ url, threadId: `thread-${Date.now()}-${serial++}` });
const say = (agent, text) =>
  agent.addMessage({ id: `u-${Date.now()}-${serial++}`, role: 'user', content: text });

// One run through the stock client; records every event it verified and applied.
async function play(agent, parameters = {}, onEvent = () => {}) {
  const events = [];
  let finished = null;
  let runError = null;
  let failed = null;
  const subscriber = {
    onEvent: ({ event }) => { events.push(event); onEvent(event, agent); },
    onRunFinishedEvent: (params) => {
      finished = { outcome: params.outcome, interrupts: params.interrupts ?? null,
        pendingToolCallIds: params.pendingToolCallIds ?? null };
    },
    onRunErrorEvent: ({ event }) => { runError = { message: event.message, code: event.code ?? null }; },
  };
  let result = null;
  try {
    result = await agent.runAgent(parameters, subscriber);
  } catch (error) {
    failed = String(error?.message ?? error);
  }
  return {
    types: events.map((e) => e.type),
    events,
    finished,
    runError,
    failed,
    newMessages: result?.newMessages ?? null,
    messages: structuredClone(agent.messages),
    pendingInterrupts: structuredClone(agent.pendingInterrupts),
  };
}

const out = {};

// 1. A text turn, then a second one on the same thread.
{
  const agent = newAgent();
  say(agent, 'hello');
  const first = await play(agent);
  say(agent, 'hello again');
  const second = await play(agent);
  // Another device: a new agent on the same thread, holding none of its history.
  const other = new HttpAgent({ url, threadId: agent.threadId });
  say(other, 'hello from elsewhere');
  const elsewhere = await play(other);
  out.text = { threadId: agent.threadId, first, second, elsewhere };
}

// 2. A server tool turn (the offline demo adds two nodes and connects them).
{
  const agent = newAgent();
  say(agent, ADA);
  out.tools = { threadId: agent.threadId, run: await play(agent) };
}

// 3. A client tool round trip: the run ends with the call pending; the application runs
//    the tool, adds its tool message and runs again.
{
  const agent = newAgent();
  say(agent, 'pick a color for the node');
  const asked = await play(agent, { tools: [PICK] });
  const call = asked.finished?.pendingToolCallIds?.[0];
  agent.addMessage({ id: `tool-${serial++}`, role: 'tool', toolCallId: call, content: JSON.stringify('teal') });
  const answered = await play(agent, { tools: [PICK] });
  out.clientTool = { threadId: agent.threadId, asked, answered, call };
}

// 4. An approval: a server tool that needs a human ends the run with an interrupt; the
//    client refuses to run on without answering it; a resume entry approves it.
{
  const agent = newAgent();
  say(agent, ADA);
  await play(agent);
  say(agent, 'delete Ada Lovelace');
  const interrupted = await play(agent);
  const interrupts = agent.pendingInterrupts;
  const expired = interrupts.map((i) => isInterruptExpired(i));
  const unanswered = await play(agent);
  const resume = buildResumeArray(interrupts, Object.fromEntries(
    interrupts.map((i) => [i.id, { status: 'resolved', payload: { approved: true } }]),
  ));
  const resumed = await play(agent, { resume });
  out.approval = { threadId: agent.threadId, interrupted, expired, unanswered, resumed };
}

// 5. An error: the model's upstream refuses; the run ends in RUN_ERROR.
{
  const agent = newAgent();
  say(agent, 'please fail now');
  out.error = { threadId: agent.threadId, run: await play(agent) };
}

// 6. Cancel: the thread's stop endpoint ends the open stream with outcome cancelled.
{
  const agent = newAgent();
  say(agent, LONG);
  let stopping = null;
  let text = '';
  const run = await play(agent, {}, (event) => {
    if (event.type !== 'TEXT_MESSAGE_CONTENT') return;
    text += event.delta;
    if (stopping === null && text.length > 40) {
      stopping = fetch(`${base}/api/agui/${encodeURIComponent(agent.threadId)}/stop`, { method: 'POST' })
        .then(async (r) => ({ status: r.status, body: await r.json() }));
    }
  });
  out.cancel = { threadId: agent.threadId, run, stop: await stopping };
}

// 7. A retry: the connection drops mid-answer (the client aborts), and the client sends
//    the same input again (same threadId, runId and messages); then the same runId with
//    another input.
{
  const agent = newAgent();
  say(agent, LONG);
  const sent = structuredClone(agent.messages);
  const runId = `run-${Date.now()}-${serial++}`;
  let seenText = 0;
  const dropped = await play(agent, { runId }, (event, a) => {
    if (event.type === 'TEXT_MESSAGE_CONTENT' && ++seenText === 2) a.abortRun();
  });
  const again = new HttpAgent({ url, threadId: agent.threadId, initialMessages: sent });
  const retried = await play(again, { runId });
  const other = new HttpAgent({ url, threadId: agent.threadId });
  say(other, 'hello');
  const reused = await play(other, { runId });
  out.retry = { threadId: agent.threadId, runId, dropped, retried, reused };
}

for (const value of Object.values(out)) {
  // Keep the line small: event lists are summarised by their types.
  for (const run of [value.run, value.first, value.second, value.elsewhere, value.asked, value.answered,
    value.interrupted, value.unanswered, value.resumed, value.dropped, value.retried, value.reused]) {
    if (run) delete run.events;
  }
}
console.log(JSON.stringify(out));
