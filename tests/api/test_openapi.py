"""openapi/openapi.json: committed, generated from the app, valid, described, and honest
about errors (our bodies, not FastAPI's `HTTPValidationError`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from openapi_spec_validator import validate

from app.openapi_dump import TARGET, render

SPEC: dict[str, Any] = json.loads(render())
SCHEMAS: dict[str, Any] = SPEC["components"]["schemas"]


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in SPEC["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_the_committed_file_is_what_the_app_generates() -> None:
    assert TARGET.read_text() == render(), "run `python3 dev.py openapi` and commit the file"


def test_the_document_is_valid_openapi() -> None:
    validate(SPEC)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_component_schema_and_property_has_a_description(name: str) -> None:
    schema = SCHEMAS[name]
    assert schema.get("description"), f"{name}: give the model a docstring"
    undocumented = [p for p, s in schema.get("properties", {}).items() if not s.get("description")]
    assert not undocumented, f"{name}: fields without a description: {undocumented}"


def test_fastapis_validation_error_schemas_are_gone() -> None:
    assert "HTTPValidationError" not in SCHEMAS
    assert "ValidationError" not in SCHEMAS
    assert "HTTPValidationError" not in json.dumps(SPEC["paths"])


def test_error_responses_carry_the_body_of_their_surface() -> None:
    for path, method, operation in _operations():
        expected = "OpenAIErrorResponse" if path.startswith("/v1/") else "ErrorResponse"
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": f"#/components/schemas/{expected}"}, (
                    method,
                    path,
                    status,
                )


def test_validation_failures_are_422_natively_and_400_on_v1() -> None:
    for path, method, operation in _operations():
        if "requestBody" not in operation:
            continue
        responses = operation["responses"]
        if path.startswith("/v1/"):
            assert "400" in responses and "422" not in responses, (method, path)
        else:
            assert "422" in responses, (method, path)


def test_authenticated_operations_document_401_and_429_and_public_ones_do_not() -> None:
    public = {"/healthz", "/readyz", "/metrics"}
    for path, method, operation in _operations():
        responses = operation["responses"]
        if path in public:
            assert "401" not in responses and "security" not in operation, path
        else:
            assert {"401", "429"} <= set(responses), (method, path)
            assert operation["security"], (method, path)


def test_operations_with_ids_or_a_model_document_404() -> None:
    for path, method, operation in _operations():
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        ref = body.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1]
        names_model = "model" in SCHEMAS.get(ref, {}).get("properties", {}) or any(
            p["name"] == "model" for p in operation.get("parameters", [])
        )
        if "{" in path or names_model:
            assert "404" in operation["responses"], (method, path)


# What an operation id may start with: a verb, so a generated client reads as calls.
VERBS = frozenset(
    {"approve", "cancel", "check", "create", "decide", "delete", "download", "edit"}
    | {"follow", "get", "list", "regenerate", "reject", "resume", "retrieve", "revoke", "run"}
    | {"send", "stop", "stream", "submit", "undo", "update", "upload"}
)


def test_operation_ids_are_unique_camel_case_verbs() -> None:
    ids = [operation["operationId"] for _, _, operation in _operations()]
    assert len(ids) == len(set(ids)), ids
    for operation_id in ids:
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-zA-Z]*)*", operation_id), operation_id
        verb = re.match(r"[a-z]+", operation_id)
        assert verb is not None and verb[0] in VERBS, operation_id


def test_the_run_and_conversation_operations_have_their_names() -> None:
    ids = {(m, p): o["operationId"] for p, m, o in _operations()}
    conversation = "/api/conversations/{conversation_id}"
    assert ids["post", "/api/conversations"] == "createConversation"
    assert ids["get", "/api/conversations"] == "listConversations"
    assert ids["post", f"{conversation}/messages"] == "sendMessage"
    assert ids["get", f"{conversation}/runs/{{run_id}}/events"] == "streamRunEvents"
    assert ids["post", "/api/approvals/{approval_id}"] == "decideApproval"
    assert ids["post", "/v1/chat/completions"] == "createChatCompletion"


def test_sse_only_answers_document_only_event_stream() -> None:
    events = SPEC["paths"]["/api/conversations/{conversation_id}/runs/{run_id}/events"]["get"]
    assert set(events["responses"]["200"]["content"]) == {"text/event-stream"}


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/api/chat", "ChatResponse"),
        ("/v1/chat/completions", "ChatCompletion"),
        ("/api/conversations/{conversation_id}/tool-results", "ToolResultsOut"),
    ],
)
def test_json_or_sse_answers_document_both(path: str, model: str) -> None:
    content = SPEC["paths"][path]["post"]["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"}
    assert "text/event-stream" in content
