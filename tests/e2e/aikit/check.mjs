// Feeds chat-bff's /v1/responses stream to Gravity UI AIKit's real `useOpenAIStreamAdapter`
// (rendered with react-test-renderer) and prints what AIKit made of it as JSON.
//
//   node check.mjs <base-url>
//
// Assertions live in tests/e2e/aikit/test_aikit_responses.py; this script only drives AIKit and
// reports. It exits non-zero when a scenario cannot finish (timeout, HTTP failure).

import {readFileSync} from 'node:fs';

import React from 'react';
import TestRenderer from 'react-test-renderer';
import {
    openAIResponseToMessages,
    useOpenAIConversationsAdapter,
    useOpenAIStreamAdapter,
} from '@gravity-ui/aikit/adapters';

const base = process.argv[2];
if (!base) {
    console.error('usage: node check.mjs <base-url>');
    process.exit(2);
}

const WEATHER = {
    type: 'function',
    name: 'get_weather',
    description: 'Weather in a city.',
    parameters: {type: 'object', properties: {city: {type: 'string'}}},
};

function post(body) {
    return fetch(`${base}/v1/responses`, {
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({model: 'scripted', ...body}),
    });
}

function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no end after ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Render the hook over a fetch Response, the way a page would, until the stream ends. */
async function renderStream(name, response) {
    let latest = null;
    let resolveEnd;
    const ended = new Promise((resolve) => {
        resolveEnd = resolve;
    });
    function Probe() {
        latest = useOpenAIStreamAdapter(response, {
            assistantMessageId: 'assistant-1',
            trackTokenUsage: true,
            onStreamEnd: resolveEnd,
        });
        return null;
    }
    const renderer = TestRenderer.create(React.createElement(Probe));
    const onStreamEnd = await withTimeout(ended, 20000, name);
    await settle(); // let React apply the final setState calls
    const state = {
        status: latest.status,
        error: latest.error ? latest.error.message : null,
        responseId: latest.responseId,
        messages: latest.messages,
        onStreamEnd,
    };
    renderer.unmount();
    return state;
}

const results = {};
results.hello = await renderStream('hello', await post({input: 'hello', stream: true}));
results.server_tool = await renderStream('server_tool', await post({input: 'find x', stream: true}));
results.client_tool = await renderStream(
    'client_tool',
    await post({input: 'weather in Paris', tools: [WEATHER], stream: true}),
);
// The same client tool with `client_tool_items: 'submission_request'`: one card waiting for
// the page's submission (answered by a function_call_output with the card's id).
results.client_submission = await renderStream(
    'client_submission',
    await post({
        input: 'weather in Paris',
        tools: [WEATHER],
        stream: true,
        client_tool_items: 'submission_request',
    }),
);
results.failure = await renderStream('failure', await post({input: 'fail now', stream: true}));

// A tool asking the user mid-call (an MCP server's question) needs an MCP server: the stream
// our encoder writes for it is the recorded one its golden test pins, fed here as a fetch
// Response so AIKit's own parsing reads exactly those bytes.
const asked = readFileSync(
    new URL('../../fixtures/encoders/responses/question-asked.sse', import.meta.url),
    'utf8',
);
results.question_recorded = await renderStream(
    'question_recorded',
    new Response(asked, {headers: {'content-type': 'text/event-stream'}}),
);

// A confirm tool: the paused stream, then the page's answer as an mcp_approval_response
// input item (the history sent back, as a stateless client does) and the continuation.
const ask = 'delete node x';
const paused = await post({input: ask});
const pausedBody = await paused.json();
results.approval_paused = await renderStream(
    'approval_paused',
    await post({input: 'delete node y', stream: true}),
);
const approvalItem = pausedBody.output.find((item) => item.type === 'mcp_approval_request');
results.approval_answered = await renderStream(
    'approval_answered',
    await post({
        stream: true,
        input: [
            {role: 'user', content: ask},
            ...pausedBody.output,
            {type: 'mcp_approval_response', approval_request_id: approvalItem.id, approve: true},
        ],
    }),
);
const replayed = await post({
    input: [
        {role: 'user', content: ask},
        ...pausedBody.output,
        {type: 'mcp_approval_response', approval_request_id: approvalItem.id, approve: true},
    ],
});
results.approval_replayed = {status: replayed.status, body: await replayed.json()};

const whole = await post({input: 'find x'});
if (!whole.ok) {
    console.error(`non-stream request failed: HTTP ${whole.status}`);
    process.exit(1);
}
results.non_stream = openAIResponseToMessages(await whole.json());

// The conversation list: our native GET /api/conversations, read by AIKit's conversations
// adapter exactly as a sidebar would (no mapping in between).
async function api(path, init) {
    const response = await fetch(`${base}${path}`, {
        headers: {'content-type': 'application/json'},
        ...init,
    });
    if (!response.ok) {
        throw new Error(`${path}: HTTP ${response.status}`);
    }
    return response.json();
}
const named = await api('/api/conversations', {method: 'POST', body: JSON.stringify({title: 'Trip plans'})});
const untitled = await api('/api/conversations', {method: 'POST', body: '{}'});
const started = await api(`/api/conversations/${untitled.id}/messages`, {
    method: 'POST',
    body: JSON.stringify({content: 'hello from the sidebar test'}),
});
await fetch(`${base}${started.events_url}`).then((r) => r.text()); // wait for the run to end
const listed = await api('/api/conversations');
let chats = null;
function Sidebar() {
    chats = useOpenAIConversationsAdapter(listed).chats;
    return null;
}
TestRenderer.create(React.createElement(Sidebar));
results.conversations = {listed, chats, ids: {named: named.id, untitled: untitled.id}};

process.stdout.write(JSON.stringify(results));
