// From chat-bff's shapes to AIKit's messages. Our stored messages already use AIKit's content
// parts (text, thinking, tool with ToolMessageProps data), so this is mostly filtering; tool
// cards get a `qa` naming their tool and status, and a card waiting for a human gets
// Accept/Reject wired to the approval it belongs to.
import type {TChatMessage} from '@gravity-ui/aikit';

type Part = {id?: string; type: string; data: Record<string, unknown>};
export type StoredMessage = {
    id: string;
    role: string;
    content: string | Part[] | null;
    metadata?: Record<string, unknown> | null;
};
export type Approval = {id: string; conversation_id: string; tool_call_id: string};

function textOf(content: StoredMessage['content']): string {
    if (typeof content === 'string') return content;
    return (content || [])
        .filter((part) => part.type === 'text')
        .map((part) => String(part.data.text ?? ''))
        .join('\n');
}

/** The conversation's stored messages as AIKit messages (user and assistant only). */
export function fromStored(messages: StoredMessage[]): TChatMessage[] {
    const out: TChatMessage[] = [];
    for (const message of messages) {
        if (message.role === 'user') {
            out.push({id: message.id, role: 'user', content: textOf(message.content)});
        } else if (message.role === 'assistant') {
            const content = message.content ?? '';
            const metadata = message.metadata ?? undefined;
            out.push({id: message.id, role: 'assistant', content: content as never, metadata});
        }
    }
    return out;
}

export type Decide = (approvalId: string, approve: boolean) => void;

/**
 * Tool cards named for the page (`data-qa="tool:<name>:<status>"`); a card waiting for a
 * human gets Accept/Reject deciding `approvalFor(card id)`: the approval of a stored tool
 * call, or the card itself when it is a streamed `mcp_approval_request` (its id is the
 * approval's).
 */
export function decorate(
    messages: TChatMessage[],
    approvalFor: (partId: string) => string | undefined,
    decide: Decide,
): TChatMessage[] {
    return messages.map((message) => {
        if (message.role !== 'assistant' || !Array.isArray(message.content)) return message;
        const content = (message.content as Part[]).map((part) => {
            if (part.type !== 'tool') return part;
            const data = {...part.data};
            data.qa = `tool:${String(data.toolName)}:${String(data.status)}`;
            const approval =
                (data.approvalId as string | undefined) ?? (part.id ? approvalFor(part.id) : undefined);
            if (data.status === 'waitingConfirmation' && approval) {
                data.onAccept = () => decide(approval, true);
                data.onReject = () => decide(approval, false);
            }
            return {...part, data};
        });
        return {...message, content: content as never};
    });
}

/** Why an answer was cut short (`metadata.status: "incomplete"`), as the page says it. */
export function cutShort(message: TChatMessage): string | null {
    const metadata = message.metadata ?? {};
    if (metadata.status !== 'incomplete') return null;
    if (metadata.reason === 'cancelled') return 'Stopped';
    if (metadata.reason === 'interrupted') return 'Interrupted: the service restarted';
    return 'Cut short';
}
