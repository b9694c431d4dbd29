"""JSON Schema rules: serialisable, portable across clients, every field described."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from .. import _json
from .base import Sink, Subject

__all__ = [
    "PORTABLE_FORMATS",
    "check_portability",
    "check_serializable",
    "iter_subschemas",
    "undescribed_fields",
]

PORTABLE_FORMATS: frozenset[str] = frozenset({
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
})
"""The ``format`` values OpenAI's structured outputs accept; the strictest common client."""

DIALECT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_MAX_DEPTH = 64
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedProperties", "unevaluatedItems", "additionalItems")


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def iter_subschemas(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object in ``node`` (itself first) with its JSON Pointer; ``$ref`` is not followed
    (referenced schemas are reached through ``$defs``)."""
    seen: set[int] = set()

    def walk(n: Any, ptr: str, depth: int) -> Iterator[tuple[str, dict[str, Any]]]:
        if not isinstance(n, dict) or id(n) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(n))
        yield ptr, n
        for key in _SCHEMA_MAPS:
            sub = n.get(key)
            if isinstance(sub, dict):
                for k, v in sub.items():
                    yield from walk(v, f"{ptr}/{key}/{_pointer_token(str(k))}", depth + 1)
        for key in _SCHEMA_LISTS:
            sub = n.get(key)
            if isinstance(sub, list):
                for i, v in enumerate(sub):
                    yield from walk(v, f"{ptr}/{key}/{i}", depth + 1)
        for key in _SCHEMA_ONE:
            sub = n.get(key)
            if isinstance(sub, dict):
                yield from walk(sub, f"{ptr}/{key}", depth + 1)
            elif key == "items" and isinstance(sub, list):  # draft-07 tuple form
                for i, v in enumerate(sub):
                    yield from walk(v, f"{ptr}/items/{i}", depth + 1)

    yield from walk(node, pointer, 0)


# -- serialisable ----------------------------------------------------------------------------------

def _normalise(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_normalise(v) for v in value]
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def _difference(before: Any, after: Any, path: str) -> str | None:
    """Where ``after`` (the round trip) first differs from ``before``, described."""
    where = path or "<root>"
    if isinstance(before, dict) and isinstance(after, dict):
        for k, v in before.items():
            if not isinstance(k, str):
                return f"{where} has the non-string key {k!r}"
            if k not in after:
                return f"{where}.{k} is lost"
            diff = _difference(v, after[k], f"{path}.{k}" if path else k)
            if diff:
                return diff
        return None
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            diff = _difference(b, a, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(before, float) and not math.isfinite(before):
        return f"{where} is {before!r}, which JSON cannot carry (it arrives as {after!r})"
    if before != after:
        return f"{where} is {type(before).__name__} {before!r}, which arrives as {after!r}"
    return None


def check_serializable(subject: Subject, wire: Mapping[str, Any], what: str, sink: Sink) -> None:
    """``schema-serializable``: ``wire`` (a list entry) survives a JSON round trip unchanged."""
    original = _normalise(dict(wire))
    try:
        back = _json.loads(_json.dumps(original))
    except (TypeError, ValueError) as exc:
        sink.add("schema-serializable", subject, f"the {what} entry cannot be encoded as JSON: {exc}",
                 "use only JSON values: str, numbers, bool, None, lists and dicts with string keys")
        return
    diff = _difference(original, back, "")
    if diff is not None:
        sink.add("schema-serializable", subject, f"the {what} entry changes in a JSON round trip: {diff}",
                 "replace it with a JSON value: no NaN/Infinity, sets, non-string keys or objects")


# -- portability -----------------------------------------------------------------------------------

def check_portability(subject: Subject, schema: Mapping[str, Any] | None, what: str, sink: Sink) -> None:
    """The ``schema-*`` portability rules over one advertised schema (``what``: 'input schema'...).

    Findings of strict portability are always produced, marked ``strict``; the runner keeps them
    only in strict mode (and counts them when deciding whether a suppression is stale)."""
    if not isinstance(schema, dict):
        return
    uses_refs: list[str] = []
    dialects: list[tuple[str, Any]] = []
    for ptr, node in iter_subschemas(schema):
        at = ptr or "/"
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in PORTABLE_FORMATS:
            sink.add("schema-format-portability", subject,
                     f"{what} {at} has format {fmt!r}; OpenAI's tool validator rejects formats outside "
                     f"{', '.join(sorted(PORTABLE_FORMATS))}, so the tool never registers there",
                     "use a plain str and state the format in Field(description=...), or move the check into "
                     "the handler")
        if "discriminator" in node:
            sink.add("schema-no-discriminator-keyword", subject,
                     f"{what} {at} uses the OpenAPI 'discriminator' keyword, which OpenAI ignores and Gemini rejects",
                     "drop Field(discriminator=...); the Literal tag of each branch already tells them apart")
        for comb in ("anyOf", "oneOf"):
            branches = node.get(comb)
            if not isinstance(branches, list):
                continue
            for i, branch in enumerate(branches):
                if isinstance(branch, dict) and "type" not in branch and "$ref" not in branch:
                    sink.add("schema-anyof-needs-type", subject,
                             f"{what} {ptr}/{comb}/{i} has no 'type'; Gemini refuses anyOf/oneOf branches without "
                             "one",
                             "give the branch a type: a concrete type instead of Any, or move a constraint-only "
                             "branch into the handler")
        if "$defs" in node or "definitions" in node or "$ref" in node:
            uses_refs.append(at)
        if "$schema" in node:
            dialects.append((at, node["$schema"]))
    if uses_refs:
        sink.add("schema-no-defs", subject,
                 f"{what} uses $defs/$ref (at {', '.join(uses_refs[:3])}{'...' if len(uses_refs) > 3 else ''}); "
                 "Gemini rejects schemas with references",
                 "inline the nested models as plain dicts or flattened fields, or accept the limitation",
                 strict=True)
    for at, dialect in dialects:
        if dialect != DIALECT_2020_12:
            sink.add("schema-dialect-tag", subject,
                     f"{what} {at} declares $schema {dialect!r}; MCP schemas are JSON Schema 2020-12 and "
                     "clients may not support another dialect",
                     "remove '$schema' and express the schema in 2020-12")
        else:
            sink.add("schema-dialect-tag", subject,
                     f"{what} {at} carries a '$schema' tag; strict clients (Gemini) reject the unknown keyword and "
                     "2020-12 is MCP's default anyway",
                     "remove '$schema' from the schema", strict=True)


# -- descriptions ----------------------------------------------------------------------------------

def _described(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("description"), str) and bool(node["description"].strip())


def undescribed_fields(schema: Mapping[str, Any] | None, *, skip_root: frozenset[str] = frozenset()) -> list[str]:
    """The dotted paths of every property without a description: nested objects, array items,
    typed union branches and ``$defs`` included; constraint-only branches (``{"required": [...]}``,
    ``if``/``then``) are not declarations and are skipped. ``skip_root`` names root properties
    whose own description is not required (their contents still are)."""
    out: list[str] = []
    seen: set[int] = set()

    def visit(node: Any, path: str, depth: int, root: bool = False) -> None:
        if not isinstance(node, dict) or id(node) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(node))
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                p = f"{path}.{key}" if path else str(key)
                if not (root and key in skip_root) and not _described(sub):
                    out.append(p)
                visit(sub, p, depth + 1)
        items = node.get("items")
        if isinstance(items, dict):
            visit(items, f"{path}[]", depth + 1)
        for key in ("prefixItems", "items"):
            seq = node.get(key)
            if isinstance(seq, list):
                for i, sub in enumerate(seq):
                    visit(sub, f"{path}[{i}]", depth + 1)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            visit(extra, f"{path}.<key>" if path else "<key>", depth + 1)
        for comb in ("anyOf", "oneOf", "allOf"):
            branches = node.get(comb)
            if isinstance(branches, list):
                for sub in branches:
                    if isinstance(sub, dict) and "type" in sub:  # typed branches declare; others constrain
                        visit(sub, path, depth + 1)

    if not isinstance(schema, dict):
        return out
    visit(schema, "", 0, root=True)
    for defs_key in ("$defs", "definitions"):
        defs = schema.get(defs_key)
        if isinstance(defs, dict):
            for name, sub in defs.items():
                visit(sub, f"{defs_key}.{name}", 1)
    return out
