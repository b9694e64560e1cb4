// chat-bff on this page's origin (the Vite server forwards /api and /v1). With auth on, a
// bearer token typed into the page is kept in sessionStorage (the built-in page's key) and
// sent on every request; with the default dev auth nothing is needed. Never a provider key.

const TOKEN_KEY = 'chatbff.token';

export function token(): string {
    return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value: string): void {
    sessionStorage.setItem(TOKEN_KEY, value.trim());
}

function headers(json: boolean, extra: Record<string, string> = {}): Record<string, string> {
    const out: Record<string, string> = {accept: 'application/json', ...extra};
    if (json) out['content-type'] = 'application/json';
    if (token()) out.authorization = `Bearer ${token()}`;
    return out;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(path, {
        method,
        headers: headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 204) return null as T;
    const data = await response.json().catch(() => null);
    if (!response.ok) {
        const error = data && data.error;
        throw new Error(error ? `${error.code}: ${error.message}` : response.statusText);
    }
    return data as T;
}

/** POST /v1/responses as a stream: a turn of the durable conversation `conversation`. */
export async function respond(
    conversation: string,
    input: string | Record<string, unknown>[],
    signal: AbortSignal,
): Promise<Response> {
    const response = await fetch('/v1/responses', {
        method: 'POST',
        headers: headers(true, {accept: 'text/event-stream'}),
        body: JSON.stringify({conversation, input, stream: true}),
        signal,
    });
    if (!response.ok) {
        const data = await response.json().catch(() => null);
        const error = data && data.error;
        throw new Error(error ? `${error.code || error.type}: ${error.message}` : response.statusText);
    }
    return response;
}

export type SseEvent = {id: string | null; event: string; data: string};

/**
 * Our native run events (`GET /api/conversations/{id}/runs/{run}/events`), read with fetch so
 * the bearer token can go in a header. A dropped connection reconnects with Last-Event-ID and
 * continues where it stopped; `onEvent` returning true ends the stream (the run ended).
 */
export async function followRun(
    conversation: string,
    run: string,
    onEvent: (event: SseEvent) => boolean,
    signal: AbortSignal,
): Promise<void> {
    const url = `/api/conversations/${encodeURIComponent(conversation)}/runs/${encodeURIComponent(run)}/events`;
    let last: string | null = null;
    for (let attempt = 0; attempt < 5 && !signal.aborted; attempt++) {
        const extra: Record<string, string> = {accept: 'text/event-stream'};
        if (last) extra['last-event-id'] = last;
        const response = await fetch(url, {headers: headers(false, extra), signal});
        if (!response.ok || !response.body) throw new Error(`run events: HTTP ${response.status}`);
        for await (const event of sseEvents(response.body)) {
            if (event.id) last = event.id;
            if (onEvent(event)) return;
        }
    }
}

async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
    const reader = body.pipeThrough(new TextDecoderStream() as ReadableWritablePair<string, Uint8Array>).getReader();
    let buffer = '';
    for (;;) {
        const {value, done} = await reader.read();
        if (done) return;
        buffer += value.replace(/\r\n?/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event: SseEvent = {id: null, event: 'message', data: ''};
            const data: string[] = [];
            for (const line of block.split('\n')) {
                const colon = line.indexOf(':');
                if (colon === 0) continue; // a comment (keep-alive)
                const field = colon < 0 ? line : line.slice(0, colon);
                const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
                if (field === 'id') event.id = text;
                else if (field === 'event') event.event = text;
                else if (field === 'data') data.push(text);
            }
            event.data = data.join('\n');
            if (data.length) yield event;
        }
    }
}
