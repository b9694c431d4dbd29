"""``input_required``: builders for the requests a handler embeds in ``ctx.request_input``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from .inputs import InputRequest, InputRequiredSpec

__all__ = ["elicitation_schema", "input_required"]

_FORMATS = {"email", "uri", "date", "date-time"}
_STRING_KEYS = {"type", "title", "description", "minLength", "maxLength", "format", "default", "enum", "enumNames",
                "oneOf"}
_NUMBER_KEYS = {"type", "title", "description", "minimum", "maximum", "default"}
_BOOL_KEYS = {"type", "title", "description", "default"}
_ARRAY_KEYS = {"type", "title", "description", "items", "minItems", "maxItems", "default"}


def _resolve(schema: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(defs[ref.split("/")[-1]])
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        return {**target, **extra}
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):
        non_null = [s for s in any_of if s.get("type") != "null"]
        if len(non_null) == 1:
            out = {**_resolve(dict(non_null[0]), defs), **{k: v for k, v in schema.items() if k != "anyOf"}}
            if out.get("default", 0) is None:
                out.pop("default")
            return out
    return schema


def _check_property(name: str, prop: Mapping[str, Any]) -> dict[str, Any]:
    t = prop.get("type")
    bad = TypeError(f"elicitation field {name!r} has a shape the restricted elicitation schema cannot express "
                    f"({dict(prop)!r}); use str, int, float, bool, a string enum, or a list of a string enum")
    if t == "string":
        keys = _STRING_KEYS
        if "format" in prop and prop["format"] not in _FORMATS:
            raise TypeError(f"elicitation field {name!r}: format {prop['format']!r} is not one of {sorted(_FORMATS)}")
        if "oneOf" in prop and not all(isinstance(o, Mapping) and "const" in o for o in prop["oneOf"]):
            raise bad
    elif t in ("number", "integer"):
        keys = _NUMBER_KEYS
    elif t == "boolean":
        keys = _BOOL_KEYS
    elif t == "array":
        keys = _ARRAY_KEYS
        items = prop.get("items")
        if not isinstance(items, Mapping) or not (
            (items.get("type") == "string" and isinstance(items.get("enum"), list))
            or (isinstance(items.get("anyOf"), list) and all("const" in o for o in items["anyOf"]))
        ):
            raise bad
    else:
        raise bad
    extra = set(prop) - keys
    if extra:
        raise TypeError(f"elicitation field {name!r} uses unsupported keyword(s) {sorted(extra)}")
    return dict(prop)


def elicitation_schema(schema: type[BaseModel] | Mapping[str, Any]) -> dict[str, Any]:
    """The restricted, flat elicitation schema for a pydantic model or a schema dict.

    Raises:
        TypeError: a field is nested, a union, or otherwise not expressible.
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        from ..jsonschema import json_schema

        raw = json_schema(schema)
        defs = raw.get("$defs", {})
        props: dict[str, Any] = {}
        for name, prop in raw.get("properties", {}).items():
            p = _resolve(dict(prop), defs)
            field_info = schema.model_fields.get(name)
            if field_info is not None and field_info.title:
                p["title"] = field_info.title
            if p.get("type") == "array" and isinstance(p.get("items"), dict):
                p["items"] = _resolve(dict(p["items"]), defs)
            props[name] = _check_property(name, p)
        out: dict[str, Any] = {"type": "object", "properties": props}
        if raw.get("required"):
            out["required"] = list(raw["required"])
        return out
    if not isinstance(schema, Mapping) or schema.get("type") != "object" or not isinstance(
            schema.get("properties"), Mapping):
        raise TypeError("requested_schema must be a pydantic model or a {'type': 'object', 'properties': ...} dict")
    for name, prop in schema["properties"].items():
        _check_property(name, prop)
    extra = set(schema) - {"type", "properties", "required", "$schema"}
    if extra:
        raise TypeError(f"requested_schema has unsupported top-level keyword(s) {sorted(extra)}")
    return dict(schema)


def _content(message: Any) -> dict[str, Any]:
    if isinstance(message, str):
        return {"role": "user", "content": {"type": "text", "text": message}}
    if isinstance(message, BaseModel):
        return message.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(message, Mapping) and "role" in message and "content" in message:
        return dict(message)
    raise TypeError("sampling messages are strings or {'role', 'content'} objects")


class _Builders:
    """``input_required(...)`` builds a spec; its methods build the embedded requests."""

    def __call__(self, input_requests: Mapping[str, InputRequest] | None = None,
                 request_state: str | None = None) -> InputRequiredSpec:
        return InputRequiredSpec(dict(input_requests or {}), request_state)

    @staticmethod
    def elicit(message: str, requested_schema: type[BaseModel] | Mapping[str, Any]) -> InputRequest:
        """A form-mode ``elicitation/create``; the schema may be a pydantic model.

        Raises:
            TypeError: the schema has a shape elicitation cannot express.
        """
        if not isinstance(message, str) or not message:
            raise TypeError("elicit needs a message")
        return InputRequest("elicitation/create", {"message": message,
                                                   "requestedSchema": elicitation_schema(requested_schema)})

    @staticmethod
    def elicit_url(message: str, url: str) -> InputRequest:
        """A URL-mode ``elicitation/create`` (authorization flows, hosted forms)."""
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise TypeError("elicit_url needs an http(s) URL")
        return InputRequest("elicitation/create", {"mode": "url", "message": message, "url": url})

    @staticmethod
    def create_message(messages: Sequence[Any] | str, max_tokens: int = 1000, *, system_prompt: str | None = None,
                       temperature: float | None = None, stop_sequences: Sequence[str] | None = None,
                       model_preferences: Mapping[str, Any] | None = None, include_context: str | None = None,
                       metadata: Mapping[str, Any] | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                       tool_choice: Mapping[str, Any] | None = None) -> InputRequest:
        """A ``sampling/createMessage`` asking the client's model."""
        msgs = [_content(messages)] if isinstance(messages, str) else [_content(m) for m in messages]
        if not msgs:
            raise TypeError("create_message needs at least one message")
        params: dict[str, Any] = {"messages": msgs, "maxTokens": max_tokens}
        for key, value in (("systemPrompt", system_prompt), ("temperature", temperature),
                           ("stopSequences", list(stop_sequences) if stop_sequences else None),
                           ("modelPreferences", model_preferences), ("includeContext", include_context),
                           ("metadata", metadata), ("tools", list(tools) if tools else None),
                           ("toolChoice", tool_choice)):
            if value is not None:
                params[key] = dict(value) if isinstance(value, Mapping) else value
        return InputRequest("sampling/createMessage", params)

    @staticmethod
    def list_roots() -> InputRequest:
        """A ``roots/list`` asking for the client's filesystem roots."""
        return InputRequest("roots/list", {})


input_required = _Builders()

