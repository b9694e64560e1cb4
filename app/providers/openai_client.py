"""The OpenAI SDK's client, building a request's options, URL and headers once, not per call.

Why: the SDK builds every request from scratch, merging its default, auth and platform
headers into a case-insensitive `Headers` five times over and parsing the URL three times,
about 200 us of a non-streaming request's 2-3 ms of CPU, all of it on the way to the first
token (`bench.profile nonstream`: `_build_request` 9% of the samples). For one client those
headers and that URL depend only on the path, the method, the retry count and the auth
scheme asked for: the body changes, and with it only `Content-Length`.

So a request of that plain shape (a JSON body; no per-call headers, query, timeout, files
or extra body) is the SDK's own request built once with an empty body (the template), with
this body and its length put in. Everything else goes through the SDK unchanged, and so do
auth, retries and errors: only `_build_request` is replaced, and it returns what the SDK's
would (same method, URL, headers in the same order, body and timeouts). The template is
keyed by the API key and base URL too, so changing either on the client takes effect; the
client's other settings (default headers and query, timeout) are fixed once it is built,
and `with_options` builds a new client.

`post_stream` is `post(..., stream=True)` without building the request's options model
anew each time (24 us): a copy of one built per path, with this body. Its answer is the
transport's response as it is, which is what the SDK's `_process_response` gives for that
cast once it has found no raw-response header among the request's (a case-insensitive
walk of them, on the way to every first token): a request built from a template without
that header is a `_PlainRequest`, and its response skips the search.
"""

from __future__ import annotations

from typing import Any

import httpx2
import openai
from openai._constants import RAW_RESPONSE_HEADER
from openai._models import FinalRequestOptions
from openai._utils._json import _CustomEncoder

_Key = tuple[str, str, int, tuple[tuple[str, object], ...], str, str]

# The SDK's `openapi_dumps` (what its requests' JSON bodies are written with), its encoder
# built once: `json.dumps` with an encoder class builds one for every call.
_DUMPS = _CustomEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class TemplatedOpenAI(openai.AsyncOpenAI):
    """`openai.AsyncOpenAI` whose plain JSON requests reuse a built template."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._templates: dict[_Key, tuple[httpx2.Request, type[httpx2.Request]]] = {}
        self._post_options: dict[str, FinalRequestOptions] = {}

    async def post_stream(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        """`post(path, body=body, cast_to=httpx2.Response, stream=True)` with bearer auth:
        the same `request` (auth, retries, status errors), its options a copy of ones
        built once per path (building them is about 24 us, copying 2 us)."""
        template = self._post_options.get(path)
        if template is None:
            template = FinalRequestOptions.construct(
                method="post",
                url=path,
                json_data=None,
                content=None,
                files=None,
                security={"bearer_auth": True},
            )
            self._post_options[path] = template
        options = template.model_copy(update={"json_data": body})
        return await self.request(httpx2.Response, options, stream=True, stream_cls=None)

    async def _process_response(self, **kwargs: Any) -> Any:
        """The SDK's, or, for a plain streamed request's `httpx2.Response` (what
        `post_stream` asks for), that response: what the SDK's returns for it."""
        response = kwargs["response"]
        if kwargs["cast_to"] is httpx2.Response and type(response.request) is _PlainRequest:
            return response
        return await super()._process_response(**kwargs)

    def _idempotency_key(self) -> str:
        """The SDK makes one per request (a uuid4) and sends it only under
        `_idempotency_header`, which this client does not have: none is made then."""
        return super()._idempotency_key() if self._idempotency_header else ""

    @property
    def user_agent(self) -> str:
        """The SDK's, which it names after the client's class."""
        return f"AsyncOpenAI/Python {self._version}"

    def _build_request(
        self, options: FinalRequestOptions, *, retries_taken: int = 0
    ) -> httpx2.Request:
        body = options.json_data
        if not isinstance(body, dict) or not _plain(options) or self._idempotency_header:
            return super()._build_request(options, retries_taken=retries_taken)
        security = tuple(sorted(options.security.items()))
        base = str(self.base_url)
        key = (options.method, options.url, retries_taken, security, self.api_key, base)
        found = self._templates.get(key)
        if found is None:
            # A one-byte body: `Content-Length` where the SDK's request has it (an empty
            # body would put it first), its value replaced below.
            stand_in = options.model_copy(update={"json_data": b" "})
            template = super()._build_request(stand_in, retries_taken=retries_taken)
            raw = RAW_RESPONSE_HEADER in template.headers  # from the client's default headers
            found = (template, httpx2.Request if raw else _PlainRequest)
            if len(self._templates) >= 64:  # paths x retries x keys: a handful in practice
                self._templates.clear()
            self._templates[key] = found
        template, request_class = found
        content = _DUMPS(body).encode()
        headers = httpx2.Headers(template.headers)
        headers["Content-Length"] = str(len(content))
        request = request_class(
            template.method,
            template.url,
            headers=headers,
            stream=httpx2.ByteStream(content),
            extensions={
                name: dict(value) if isinstance(value, dict) else value
                for name, value in template.extensions.items()
            },
        )
        request.read()  # `content` readable, as on the SDK's request
        return request


class _PlainRequest(httpx2.Request):
    """A request built from a template, without the SDK's raw-response header."""


def _plain(options: FinalRequestOptions) -> bool:
    """Nothing but the body differs from the template's request."""
    return (
        not options.headers
        and not options.params
        and options.files is None
        and options.content is None
        and options.extra_json is None
        and isinstance(options.timeout, openai.NotGiven)
    )
