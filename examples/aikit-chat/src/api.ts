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

/**
 * GET /v1/responses/{id}?stream=true: a response of a durable conversation, its events replayed
 * from the first one and then followed live (the run keeps going while nobody listens).
 */
export async function replay(responseId: string, signal: AbortSignal): Promise<Response> {
    const response = await fetch(`/v1/responses/${encodeURIComponent(responseId)}?stream=true`, {
        headers: headers(false, {accept: 'text/event-stream'}),
        signal,
    });
    if (!response.ok) throw new Error(`resume ${responseId}: HTTP ${response.status}`);
    return response;
}

/**
 * The URL of the conversation's follow stream (GET /api/conversations/{id}/events: every run
 * of it and every tool part decided outside a run, from any tab), for an EventSource; with
 * auth on, a stream token for that path goes in `?token=` (EventSource sends no headers).
 */
export async function followUrl(conversation: string): Promise<string> {
    const path = `/api/conversations/${encodeURIComponent(conversation)}/events`;
    if (!token()) return path;
    const minted = await api<{token: string}>('POST', '/api/stream-tokens', {path});
    return `${path}?token=${encodeURIComponent(minted.token)}`;
}
