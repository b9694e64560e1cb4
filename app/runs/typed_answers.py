"""A typed reply that decides the conversation's pending approval.

While one approval waits in a conversation, a user message that is only an answer
("yes", "approve", "да" / "no", "отмена"; see `app.domain.intent`) decides it through
the approval service, with the same checks as `POST /api/approvals/{id}` (this user's,
pending, unexpired, bound to the stored call) and audited as decided by typing. The
message itself is still stored and answered, so the model continues from the decided
card. Anything else, a negated or longer reply, or two approvals waiting at once (which
one would "yes" mean?), decides nothing: the message goes to the model and the approvals
stay pending. A database out of reach while deciding (`Unavailable`) is no such answer:
the reply is refused with 503 and Retry-After rather than sent to the model as text with
the approval left pending, so the client's retry of the same "yes" decides it.
"""

from __future__ import annotations

import logging

from app.domain.errors import ChatBffError, Unavailable
from app.domain.identity import Caller
from app.domain.intent import typed_decision
from app.domain.parts import Part, TextPart
from app.toolruntime.approvals import ApprovalService

log = logging.getLogger("chat_bff.approvals")


class TypedAnswers:
    def __init__(self, approvals: ApprovalService) -> None:
        self._approvals = approvals

    async def apply(self, caller: Caller, conversation_id: str, content: str | list[Part]) -> bool:
        """Decide the one pending approval the reply answers; True when one was decided.
        A typed decision first closes the calls whose outcome an outage lost (the same
        error a decision sent again writes): the reply is the decision sent again. Other
        replies cost nothing here (a turn's statements are counted)."""
        decision = typed_decision(_text_only(content))
        if decision is None:
            return False
        if await self._approvals.settle_lost_in(caller, conversation_id):
            return False  # the model reads the reply with the call settled
        pending = [
            a for a in await self._approvals.inbox(caller) if a.conversation_id == conversation_id
        ]
        if len(pending) != 1:
            return False
        try:
            await self._approvals.decide(caller, pending[0].id, decision, via="typed")
        except Unavailable:
            raise  # out of reach for a moment, not an answer: 503, the client sends it again
        except ChatBffError as exc:  # decided or expired meanwhile: the model gets the text
            log.info("a typed answer decided nothing", extra={"code": exc.code})
            return False
        return True


def _text_only(content: str | list[Part]) -> str:
    """The reply's text when it is nothing but text; "" when it carries anything else."""
    if isinstance(content, str):
        return content
    if all(isinstance(p, TextPart) for p in content):
        return " ".join(p.data.text for p in content if isinstance(p, TextPart))
    return ""
