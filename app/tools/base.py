"""What a server tool is, and what its handler receives.

A `ServerTool` is data: a name, a description, a pydantic arguments model (whose JSON schema
is what the model sees), an async handler, a policy and a few flags. Handlers never read
identity from model arguments: they get a `ToolContext` with the call's site (the caller,
the pinned scope, where the call happens) and the unit of work the runtime opened for them
(one transaction per call; one for a whole proposal batch).

This module, like all of `app.tools`, is the authoring API: it knows the domain and
pydantic, never settings, the database or the runtime that persists approvals.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from app.domain.identity import Caller, ForwardedIdentity, ForwardMode
from app.domain.tooling import CallSite

Policy = Literal["auto", "confirm", "propose"]

DEFAULT_SCOPE_ARGS: tuple[str, ...] = ("session_id", "conversation_id", "workspace_id", "user_id")
PROVISIONAL_PREFIX = "prov_"


class ToolArgs(BaseModel):
    """Base of every tool's arguments: undeclared arguments are a validation error.

    `extra="forbid"` also puts `additionalProperties: false` in the schema the model sees.
    """

    model_config = ConfigDict(extra="forbid")


class ToolFailure(Exception):
    """A failure the model (or the human approving a batch) can read and act on.

    Raise it from a handler for "node not found", "ambiguous name" and the like; its message
    becomes the error result. Any other exception becomes a generic error result.
    """


AnswerAction = Literal["accept", "decline", "cancel"]


class InputRequired(Exception):
    """Raised by a handler that needs the user's answer before it can finish (an MCP
    server's elicitation).

    The runtime stores `message`, `requested_schema` and `state` (JSON the handler needs to
    continue, e.g. the server's opaque request state), the part waits in
    `waitingSubmission`, and once the user answers the handler is called again with the
    same arguments and `ctx.answer` set. Nothing is kept in memory between the two calls,
    so the answer may reach any instance.
    """

    def __init__(
        self, message: str, requested_schema: dict[str, Any], state: dict[str, Any]
    ) -> None:
        super().__init__(message)
        self.message = message
        self.requested_schema = requested_schema
        self.state = state


@dataclass(frozen=True)
class UserAnswer:
    """The user's answer to an `InputRequired`, with the state the handler stored."""

    action: AnswerAction
    content: dict[str, Any] | None
    state: dict[str, Any]


@dataclass(frozen=True)
class ToolContext:
    """Everything a handler may know about who is calling and where.

    `tx` is the unit of work the call runs in (an `app.store.database.Tx`), typed loosely
    so that writing a tool needs no database import. A tool that keeps tables of its own
    narrows it (`isinstance(ctx.tx, Tx)`) and builds its repository on `tx.session`: its
    writes then commit or roll back with the call (with the whole batch, when a proposal
    queue is applied). See `app.examples.graph.repo.GraphRepo.for_call`.
    """

    site: CallSite
    tx: object
    # Provisional id -> real id, filled while a proposal batch is applied in order.
    provisional: Mapping[str, str] = field(default_factory=dict)
    # The identity to call a downstream API with, for tools that ask for it.
    identity: ForwardedIdentity | None = None
    # Set when the handler is called again with the user's answer to its `InputRequired`.
    answer: UserAnswer | None = None

    @property
    def caller(self) -> Caller:
        return self.site.caller

    @property
    def scope(self) -> Mapping[str, str]:
        return self.site.scope

    @property
    def conversation_id(self) -> str | None:
        return self.site.conversation_id

    @property
    def run_id(self) -> str:
        return self.site.run_id

    @property
    def tool_call_id(self) -> str:
        return self.site.tool_call_id

    @property
    def model_id(self) -> str:
        return self.site.model_id


ArgsT = TypeVar("ArgsT", bound=BaseModel)
Handler = Callable[[ArgsT, ToolContext], Awaitable[Any]]
Summarizer = Callable[[ArgsT], str]


@dataclass(frozen=True)
class Undoable:
    """What an applied call left behind, kept with its batch so the batch can be undone.

    `touched`: the entities the call wrote (names the tool chooses, e.g. `node node_1`);
    at undo time their state must still be what the batch left. `data`: JSON that
    `revert` needs (ids created, a snapshot of what a delete removed, an old value).
    """

    touched: tuple[str, ...]
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Inverse(Generic[ArgsT]):
    """How a tool takes back one applied call (undo of a proposal batch).

    Every hook runs in the batch's unit of work (`ToolContext.tx`), with the call's
    validated, pinned arguments:

    - `before(args, ctx)` (optional): JSON captured just before the handler runs, for
      what the call destroys (a deleted row and its edges).
    - `after(args, result, before, ctx) -> Undoable`: right after the handler.
    - `state(args, entities, ctx) -> {entity: digest or None}`: the entities' current
      state (None: gone). The runtime records it when the batch is applied and compares
      it when the batch is undone; any difference is a 409 naming the entity.
    - `revert(args, data, ctx)`: put things back; raise `ToolFailure` when it cannot.
    """

    after: Callable[[ArgsT, Any, Any, ToolContext], Awaitable[Undoable]]
    state: Callable[[ArgsT, Sequence[str], ToolContext], Awaitable[Mapping[str, str | None]]]
    revert: Callable[[ArgsT, Mapping[str, Any], ToolContext], Awaitable[None]]
    before: Callable[[ArgsT, ToolContext], Awaitable[Any]] | None = None


@dataclass(frozen=True)
class ServerTool(Generic[ArgsT]):
    """A tool the server runs itself.

    `creates`: when the call is proposed rather than run, the receipt carries a provisional
    id (`prov_...`) that later proposals may reference; on approval the handler's result
    `id` becomes the real id it stands for. `inverse`: how an applied proposal is undone.
    """

    name: str
    description: str
    args_model: type[ArgsT]
    handler: Handler[ArgsT]
    policy: Policy = "auto"
    mutates: bool = False
    timeout: float | None = None
    roles: frozenset[str] | None = None
    scope_args: tuple[str, ...] = DEFAULT_SCOPE_ARGS
    creates: bool = False
    summarize: Summarizer[ArgsT] | None = None
    # Whose identity the handler gets in `ctx.identity` to call a downstream API with:
    # `off` (default), `bearer` (the caller's own token, when the deployment allows it),
    # `minted` (a short-lived token for `audience`, signed by the service).
    forward_identity: ForwardMode = "off"
    audience: str | None = None
    # How an applied proposal of this tool is undone; None: a batch holding it cannot be.
    inverse: Inverse[ArgsT] | None = None
    # For the tool router: word forms the tool answers to (any language; English forms
    # exactly as written, Russian ones by stem), and more text describing it (other
    # languages, sample requests) for the embedding fallback. The model never sees them.
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    # Runs longer than a turn (e.g. anything over 30 s): the call becomes a durable
    # background job, the turn ends with its part `loading`, and its result continues the
    # conversation in a new run. `timeout` then caps the job (default: the background
    # timeout setting). `resumable`: after a restart the job runs again from the start
    # (the handler must tolerate that); otherwise it is failed with a clear result.
    long_running: bool = False
    resumable: bool = False
    # The handler may stop to ask the user mid-call (raise `InputRequired`), as an MCP
    # server's tools may: a wire that shows a call only once it cannot pause asks this.
    asks: bool = False

    def declared_scope_args(self) -> tuple[str, ...]:
        """The scope arguments this tool's arguments model actually declares."""
        fields = self.args_model.model_fields
        return tuple(name for name in self.scope_args if name in fields)

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema the model sees: pinned scope arguments are left out."""
        schema = self.args_model.model_json_schema()
        hidden = set(self.declared_scope_args())
        props = {k: v for k, v in schema.get("properties", {}).items() if k not in hidden}
        schema["properties"] = props
        required = [r for r in schema.get("required", []) if r not in hidden]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        schema["additionalProperties"] = False
        schema.pop("title", None)
        return schema

    def summary(self, args: ArgsT) -> str:
        """One line a human reads before approving the call."""
        if self.summarize is not None:
            return self.summarize(args)
        shown = visible_args(self, args.model_dump(mode="json"))
        rendered = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"Run {self.name}({rendered})"

    def allows_roles(self, roles: frozenset[str]) -> bool:
        return self.roles is None or bool(self.roles & roles)


def visible_args(tool: ServerTool[Any] | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as a model, a UI or an API client sees them: pinned scope values left out.

    The one rule for every place that shows a call's arguments: tool parts and results,
    summaries, receipts, the approval and proposal views. The tool decides what is pinned
    (the scope arguments it declares). A stored call whose tool is no longer registered
    hides every default scope name: its pinned values are the caller's own ids, and
    showing less is the safe side.
    """
    hidden = tool.declared_scope_args() if tool is not None else DEFAULT_SCOPE_ARGS
    return {k: v for k, v in args.items() if k not in hidden}


def result_to_json(result: Any) -> Any:
    """Handler results as plain JSON values (pydantic models are dumped)."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    return result
