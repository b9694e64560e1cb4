// A chat page on Gravity UI AIKit over chat-bff:
// - History: our conversation list (GET /api/conversations) through AIKit's conversations adapter.
// - A turn: POST /v1/responses {conversation, input, stream} rendered by useOpenAIStreamAdapter.
// - Tool cards come from the stream (mcp_call items) and from the stored messages.
// - Approvals: a card waiting for a human has Accept/Reject; the answer is an
//   mcp_approval_response input item on /v1/responses, and the turn continues in that stream.
// - Stop: POST /api/conversations/{id}/runs/{run}/cancel (the run id is the response id's); the
//   stream ends, and the stored answer (as far as it got) shows with a "Stopped" mark.
// - Other tabs: while idle, the page follows the conversation (GET /api/conversations/{id}/events)
//   and reloads it when another tab starts a run or a card is decided elsewhere.
// - Reload: the conversation's stored messages, then its active run's response replayed from
//   its first event and followed (GET /v1/responses/{id}?stream=true) through the same
//   adapter, so nothing said so far is lost.
import {ChatContainer} from '@gravity-ui/aikit';
import type {TChatMessage, TSubmitData} from '@gravity-ui/aikit';
import {useOpenAIConversationsAdapter, useOpenAIStreamAdapter} from '@gravity-ui/aikit/adapters';
import type {OpenAIConversationsListResponseLike} from '@gravity-ui/aikit/adapters';
import {TextInput} from '@gravity-ui/uikit';
import {useCallback, useEffect, useMemo, useRef, useState} from 'react';

import {api, followUrl, replay, respond, setToken, token} from './api';
import type {Approval, StoredMessage} from './messages';
import {cutShort, decorate, fromStored} from './messages';

type Detail = {id: string; active_run_id: string | null; messages: StoredMessage[]};
const runOf = (responseId: string) => `run_${responseId.replace(/^resp_/, '')}`;
const responseOf = (runId: string) => `resp_${runId.replace(/^run_/, '')}`;

/** Under an answer cut short: why (stopped, interrupted); nothing under a whole one. */
function CutMark({message}: {message: TChatMessage}) {
    const why = cutShort(message);
    return why ? (
        <span className="cut" data-qa="cut-short">
            {why}
        </span>
    ) : null;
}
const messageListConfig = {assistantExtraInfo: CutMark};

export function App() {
    const [list, setList] = useState<OpenAIConversationsListResponseLike | null>(null);
    const {chats} = useOpenAIConversationsAdapter(list);
    const [active, setActive] = useState<string | null>(location.hash.slice(1) || null);
    const activeRef = useRef(active);
    activeRef.current = active;
    const [stored, setStored] = useState<TChatMessage[]>([]);
    const [approvals, setApprovals] = useState<Approval[]>([]);
    const [stream, setStream] = useState<Response | null>(null);
    const [base, setBase] = useState<TChatMessage[]>([]);
    const [assistantId, setAssistantId] = useState('assistant-0');
    const [error, setError] = useState<Error | null>(null);
    const busy = useRef(false); // a turn of this tab is starting or streaming

    const loadChats = useCallback(async () => {
        setList(await api<OpenAIConversationsListResponseLike>('GET', '/api/conversations?limit=50'));
    }, []);

    /** Stored messages and pending approvals of `id`; follows its active run, if any. */
    const open = useCallback(async (id: string, follow = true) => {
        const detail = await api<Detail>('GET', `/api/conversations/${encodeURIComponent(id)}`);
        const inbox = await api<{data: Approval[]}>('GET', '/api/approvals');
        if (activeRef.current !== id) return;
        const messages = fromStored(detail.messages);
        setStored(messages);
        setApprovals(inbox.data.filter((a) => a.conversation_id === id));
        if (follow && detail.active_run_id && !busy.current) {
            busy.current = true;
            const resumed = await replay(responseOf(detail.active_run_id), new AbortController().signal);
            if (activeRef.current !== id) return;
            setBase(messages);
            setAssistantId(`assistant-${Date.now()}`);
            setStream(resumed);
        }
    }, []);

    const idle = stream === null;
    useEffect(() => {
        if (!active || !idle) return undefined;
        let source: EventSource | null = null;
        let closed = false;
        const refresh = () => {
            if (!busy.current && !closed) open(active).catch(setError);
        };
        followUrl(active)
            .then((url) => {
                if (closed) return;
                source = new EventSource(url);
                // Read again once the server has placed this follower: a card decided or a run
                // started between the first read and then is in the stored conversation.
                source.addEventListener('follow', refresh);
                source.addEventListener('part_update', refresh);
                source.addEventListener('run_start', refresh);
            })
            .catch(() => undefined); // without it the page still works; other tabs show on reload
        return () => {
            closed = true;
            source?.close();
        };
    }, [active, idle, open]);

    useEffect(() => {
        loadChats().catch(setError);
        if (active) open(active).catch(setError);
        // eslint-disable-next-line react-hooks/exhaustive-deps
    }, []);

    const live = useOpenAIStreamAdapter(stream, {
        initialMessages: base,
        assistantMessageId: assistantId,
        onStreamEnd: (messages) => {
            // The stream's last state stays on screen (and the page says it is still busy)
            // until the stored copy replaced it, so the page is never idle on a half-merged view.
            const id = activeRef.current;
            const settled = () => {
                busy.current = false;
                setStream(null);
            };
            (id ? open(id, false) : Promise.resolve())
                .catch((e: Error) => {
                    setStored(messages);
                    setError(e);
                })
                .finally(settled);
            loadChats().catch(setError);
        },
    });

    const select = (id: string) => {
        setActive(id);
        activeRef.current = id;
        location.hash = id;
        setStream(null);
        setStored([]);
        open(id).catch(setError);
    };

    const start = async (id: string, input: string | Record<string, unknown>[], shown: TChatMessage[]) => {
        busy.current = true;
        setError(null);
        setBase(shown);
        setStored(shown);
        setAssistantId(`assistant-${Date.now()}`);
        try {
            setStream(await respond(id, input, new AbortController().signal));
        } catch (e) {
            busy.current = false;
            setError(e as Error);
        }
    };

    const send = async (data: TSubmitData) => {
        let id = active;
        if (!id) {
            id = (await api<{id: string}>('POST', '/api/conversations', {})).id;
            setActive(id);
            activeRef.current = id;
            location.hash = id;
        }
        const user: TChatMessage = {id: `user-${Date.now()}`, role: 'user', content: data.content};
        await start(id, data.content, [...stored, user]);
    };

    const decide = (approvalId: string, approve: boolean) => {
        if (!active) return;
        const approval = approvals.find((a) => a.id === approvalId);
        const cardId = approval ? approval.tool_call_id : approvalId;
        const shown = stored.map((message) => {
            if (message.role !== 'assistant' || !Array.isArray(message.content)) return message;
            const content = (message.content as {id?: string; type: string; data: object}[]).map((part) =>
                part.type === 'tool' && part.id === cardId
                    ? {...part, data: {...part.data, status: approve ? 'loading' : 'cancelled'}}
                    : part,
            );
            return {...message, content: content as never};
        });
        setApprovals((all) => all.filter((a) => a.id !== approvalId));
        const answer = {type: 'mcp_approval_response', approval_request_id: approvalId, approve};
        start(active, [answer], shown);
    };

    const cancel = async () => {
        if (!active || !stream || !live.responseId) return;
        const run = runOf(live.responseId);
        await api('POST', `/api/conversations/${encodeURIComponent(active)}/runs/${encodeURIComponent(run)}/cancel`);
    };

    const createChat = () => {
        setActive(null);
        activeRef.current = null;
        history.replaceState(null, '', location.pathname);
        setStream(null);
        setStored([]);
    };

    const deleteChat = async (chat: {id: string}) => {
        await api('DELETE', `/api/conversations/${encodeURIComponent(chat.id)}`);
        if (chat.id === active) createChat();
        await loadChats();
    };

    const shown: TChatMessage[] = stream ? live.messages : stored;
    const byToolCall = useMemo(() => new Map(approvals.map((a) => [a.tool_call_id, a.id])), [approvals]);
    const pending = new Set(approvals.map((a) => a.id));
    const messages = decorate(shown, (id) => byToolCall.get(id) ?? (pending.has(id) ? id : undefined), decide);
    const activeChat = chats.find((chat) => chat.id === active) ?? null;
    const status = !stream ? 'ready' : live.status === 'ready' ? 'streaming' : live.status;

    return (
        <div className="page" data-status={status} data-conversation={active ?? ''}>
            <div className="auth">
                <span>chat-bff on this origin</span>
                <TextInput
                    size="s"
                    type="password"
                    placeholder="Bearer token (only when auth is on)"
                    defaultValue={token()}
                    onUpdate={(value) => {
                        setToken(value);
                        loadChats().catch(setError);
                    }}
                />
            </div>
            <ChatContainer
                className="chat"
                chats={chats}
                activeChat={activeChat}
                messages={messages}
                status={status}
                error={error ?? (stream ? null : live.error)}
                onSendMessage={send}
                onSelectChat={(chat) => select(chat.id)}
                onCreateChat={createChat}
                onDeleteChat={deleteChat}
                onCancel={cancel}
                messageListConfig={messageListConfig}
                showHistory
                showNewChat
                qa={{
                    root: 'chat',
                    headerHistory: 'history-button',
                    history: 'history',
                    messageList: 'messages',
                    promptInput: 'prompt',
                    submitButton: 'submit',
                }}
            />
        </div>
    );
}
