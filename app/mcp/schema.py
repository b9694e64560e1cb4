"""An arguments model for a tool described by a JSON schema (an MCP tool's input schema).

Our runtime pins scope arguments and validates through a pydantic model; an MCP tool brings
a JSON schema instead. `schema_args_model` builds a model that

- declares one field per schema property (so pinning finds the scope arguments the tool
  declares, and an undeclared argument is refused as for our own tools),
- validates the whole object against the schema with `jsonschema` before the call (servers
  are not required to, and a call with bad arguments never reaches one),
- shows the model the server's own schema (less the pinned arguments, as for every tool),
- dumps only the arguments that were given, under their schema names.
"""

from __future__ import annotations

import copy
import keyword
from collections.abc import Mapping
from typing import Any, ClassVar

from jsonschema import validators
from jsonschema.exceptions import SchemaError
from pydantic import Field, create_model, model_validator

from app.tools.base import ToolArgs


class InvalidSchema(ValueError):
    """A tool's input schema is not a usable JSON schema of an object."""


class SchemaArgs(ToolArgs):
    """Base of the models built from input schemas."""

    input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, data: Any) -> Any:
        validator = validators.validator_for(cls.input_schema)(cls.input_schema)
        problems = []
        for error in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{where}: {error.message}" if where else error.message)
        if problems:
            raise ValueError("; ".join(problems))
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.input_schema)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("exclude_unset", True)
        kwargs.setdefault("by_alias", True)
        return super().model_dump(**kwargs)


def _plain(name: str) -> bool:
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and not name.startswith("_")
        and not hasattr(SchemaArgs, name)
    )


def schema_args_model(tool_name: str, schema: Mapping[str, Any]) -> type[SchemaArgs]:
    """A `SchemaArgs` model for `schema`; `InvalidSchema` if it cannot be one."""
    schema = dict(schema)
    if schema.get("type") != "object":
        raise InvalidSchema("the input schema must describe an object")
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise InvalidSchema(f"not a valid JSON schema: {exc.message}") from None
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise InvalidSchema("properties must be an object")
    fields: dict[str, Any] = {}
    for index, prop in enumerate(properties):
        if _plain(prop):
            fields[prop] = (Any, None)
        else:
            fields[f"arg_{index}"] = (Any, Field(default=None, alias=prop))
    model = create_model(f"{tool_name}_args", __base__=SchemaArgs, **fields)
    model.input_schema = schema
    return model
