// Drives Gravity UI AIKit's own Node server helper (`@gravity-ui/aikit/server/openai`,
// OpenAIService over the official openai package) against chat-bff's /v1 with `baseURL`
// pointed at it, the way a team already running AIKit's server would, and prints what it
// saw as JSON. Assertions live in test_aikit_responses.py.
//
//   node server_helper.mjs <base-url>

import {createRequire} from 'node:module';

// AIKit 2.2.0's ESM server build is not marked as a module for Node (no "type": "module"
// beside it), so a Node server loads the helper the CommonJS way, through `require`. Its
// version check needs `semver`, which AIKit does not declare: package.json lists it.
const {OpenAIService} = createRequire(import.meta.url)('@gravity-ui/aikit/server/openai');

const base = process.argv[2];
if (!base) {
    console.error('usage: node server_helper.mjs <base-url>');
    process.exit(2);
}

const service = new OpenAIService({baseURL: `${base}/v1`, apiKey: 'not-a-key', model: 'scripted'});

const conversation = await service.conversations.create({metadata: {topic: 'aikit'}});

// A streamed turn in the conversation, through the helper's ResponseStream.
const events = [];
let text = '';
let finished = false;
const stream = await service.createResponseStream({conversation: conversation.id, input: 'hello'});
stream.onEventChunk((event) => {
    events.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
});
stream.onFinish(() => {
    finished = true;
});
await stream.start();

// The history, a page of one item at a time (the helper follows `has_more` and `after`).
const items = await service.getAllConvItems(conversation.id, 1);
// A title from the first items, as AIKit's server summarises a chat.
const title = await service.summarizeConvTitle({conversation: conversation.id, byFirstItems: 5});
const retrieved = await service.conversations.retrieve(conversation.id);
await service.conversations.delete(conversation.id);
let afterDelete = null;
try {
    await service.conversations.retrieve(conversation.id);
} catch (error) {
    afterDelete = error.status;
}

console.log(
    JSON.stringify({conversation, events, text, finished, items, title, retrieved, afterDelete}),
);
