"""Turning what a caller asked for into a `RunRequest`: the model (the catalogue is the
allowlist), the provider behind it, the client's tools and the run's options.

Stateless and conversation turns both go through `RunRequests.build`, so the rules (an
unknown or forbidden model is 404, a client tool may not take a server tool's name, a
`tool_choice` must name a tool the model is offered) are written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.agent.ports import ToolRuntime
from app.domain.errors import InvalidRequest
from app.domain.events import ContextInfo
from app.domain.identity import Caller
from app.domain.models import Catalog, ModelInfo
from app.domain.stream import GenerationOptions, NamedToolChoice, ToolChoice, ToolSpec, no_options
from app.domain.tooling import ConversationMode, RunContext
from app.providers.base import Provider
from app.providers.failover import CircuitBreaker, FailoverProvider, failover_chain
from app.runs.active import RunRequest


@dataclass(frozen=True)
class TurnInput:
    """What a caller chose for one turn, whatever wire it came over."""

    client_tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice | None = None
    model_id: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    options: GenerationOptions = field(default_factory=no_options)
    # How the wire that started the turn shows it (stored so a replay shows it alike).
    wire_options: Mapping[str, str] = field(default_factory=dict)
    # Whether every reader of this turn's answer can take back streamed text (native SSE,
    # Vercel v7's `reset-step`, an answer sent whole): only then may a stream that failed
    # after its first byte be answered again by a fallback.
    retractable: bool = False


@dataclass(frozen=True)
class ConversationSettings:
    """What a conversation adds to its turns: its model, mode, scope and system prompt."""

    model_id: str | None = None
    mode: ConversationMode = "auto"
    scope: dict[str, str] = field(default_factory=dict)
    system_prompt: str | None = None


class RunRequests:
    def __init__(
        self,
        catalog: Catalog,
        providers: dict[str, Provider],
        tools: ToolRuntime,
        breaker: CircuitBreaker | None = None,
        *,
        failover_after_first_byte: bool = False,
    ) -> None:
        self._catalog = catalog
        self._providers = providers
        self._tools = tools
        self._breaker = breaker or CircuitBreaker()
        self._after_first_byte = failover_after_first_byte

    def build(
        self,
        caller: Caller,
        turn: TurnInput,
        conversation: ConversationSettings | None = None,
        *,
        truncated: bool = False,
    ) -> RunRequest:
        settings = conversation or ConversationSettings(scope={"user_id": caller.user_id})
        model = self._catalog.resolve(turn.model_id or settings.model_id, caller.roles)
        provider = self._providers[model.provider]
        # Fallbacks are resolved with the caller's roles like the model asked for: one the
        # caller may not choose must not answer for them either.
        fallbacks = self._catalog.usable(model.fallbacks, caller.roles)
        if fallbacks:
            chain = failover_chain(model, fallbacks, self._providers)
            allowed = model.failover_after_first_byte
            after_first_byte = self._after_first_byte if allowed is None else allowed
            provider = FailoverProvider(
                chain, self._breaker, after_first_byte=after_first_byte and turn.retractable
            )
        refused = [name for name in turn.options.named() if name not in provider.supports]
        if refused:
            raise InvalidRequest(
                f"`{refused[0]}` is not supported by the model `{model.id}` "
                f"({model.provider}); leave it out or choose another model.",
                param=refused[0],
            )
        clashes = [t.name for t in turn.client_tools if self._tools.knows(t.name)]
        if clashes:
            raise InvalidRequest(
                f"Client tool {clashes[0]!r} has the name of a server tool; rename it.",
                param="tools",
            )
        if turn.tool_choice == "required" or isinstance(turn.tool_choice, NamedToolChoice):
            _check_tool_choice(turn.tool_choice, self._offered(caller, model, turn.client_tools))
        return RunRequest(
            caller=caller,
            model=model,
            provider=provider,
            client_tools=turn.client_tools,
            tool_choice=turn.tool_choice,
            max_output_tokens=turn.max_output_tokens,
            temperature=turn.temperature,
            parallel_tool_calls=turn.parallel_tool_calls,
            options=turn.options,
            wire_options=dict(turn.wire_options),
            mode=settings.mode,
            scope=dict(settings.scope),
            context=(
                ContextInfo(tokens=0, limit=model.context_window, truncated_input=truncated)
                if conversation is not None
                else None
            ),
            system_prompt=settings.system_prompt,
            fallback_models=tuple(fallbacks),
        )

    def _offered(
        self, caller: Caller, model: ModelInfo, client_tools: Sequence[ToolSpec]
    ) -> set[str]:
        """The names of the tools the model will be offered: the caller's server tools for
        this model and the client's, none when the model calls no tools (as the loop
        offers them; the tool router later narrows the server tools, but keeps a named
        choice)."""
        if not model.supports_tools:
            return set()
        # Only the caller and the model decide which server tools are offered.
        ctx = RunContext(caller=caller, run_id="", conversation_id=None, model_id=model.id)
        return {s.name for s in self._tools.specs(ctx)} | {t.name for t in client_tools}


def _check_tool_choice(choice: ToolChoice | None, offered: set[str]) -> None:
    """A choice that forces a tool call must have a tool to call: "required" with no tool
    offered, or a function that is not among the tools, would be dropped or answered by the
    provider with an error (OpenAI answers 400 for both). `auto` and `none` ask nothing a
    request without tools cannot give."""
    if choice == "required" and not offered:
        raise InvalidRequest(
            "tool_choice 'required' needs tools, and this request offers none: "
            "declare `tools` or leave tool_choice out.",
            param="tool_choice",
        )
    if isinstance(choice, NamedToolChoice) and choice.name not in offered:
        raise InvalidRequest(
            f"tool_choice names the function {choice.name!r}, which is not among the tools "
            "of this request.",
            param="tool_choice",
        )
