"""An operation's arguments: one input schema from its path, query, header and cookie parameters
and its request body, and where each argument goes in the request.

Names are the parameters' own, made safe (``[A-Za-z0-9_.-]``, not starting with ``_``, which
MCP clients use for their own keys). A JSON or form body whose schema is an object is flattened:
its properties are arguments beside the parameters; any other body is one argument, ``body``.
When two arguments would share a name, the first in the order path, query, header, cookie, body
keeps it and the later one is suffixed with where it goes: ``id`` (path) and ``id_query``,
``name`` (query) and ``name_body``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .refs import Document, Resolver, SpecError, pointer_join
from .schema import Converter
from .select import Operation

__all__ = ["Arg", "RequestPlan", "input_plan"]

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_LOCATIONS = ("path", "query", "header", "cookie")
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})  # OpenAPI: these are ignored
_JSON = re.compile(r"^application/([\w.+-]*\+)?json(;.*)?$|^\*/\*$", re.IGNORECASE)
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: its name in the tool, where it goes and its name there."""

    name: str
    location: str
    """``path``, ``query``, ``header``, ``cookie``, ``field`` (a body property) or ``body``."""
    wire: str
    style: str = "form"
    explode: bool = True
    binary: bool = False
    """A base64 string sent as bytes (a file part, or a raw body)."""


@dataclass(slots=True)
class RequestPlan:
    """How arguments become the request."""

    method: str
    path: str
    args: list[Arg] = field(default_factory=list)
    body: str | None = None
    """``json``, ``form``, ``multipart``, ``raw`` or ``None`` (no body)."""
    content_type: str | None = None


def _safe(name: str) -> str:
    out = _SAFE.sub("_", name)
    if out.startswith("_") or not out:
        out = "p" + out
    return out[:64]


def _media(content: Any, where: str, doc: Document) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(content, dict) or not content:
        return None
    types = [t for t in content if isinstance(t, str)]
    for test in (lambda t: bool(_JSON.match(t)), lambda t: t.split(";")[0] == FORM,
                 lambda t: t.split(";")[0] == MULTIPART, lambda t: True):
        for t in types:
            if test(t):
                media = content[t]
                if not isinstance(media, dict):
                    raise SpecError(doc.at(pointer_join(where, "content", t)), "a media type must be an object")
                return t, media
    return None


def input_plan(op: Operation, resolver: Resolver, doc: Document, conv: Converter) -> tuple[dict[str, Any], RequestPlan]:
    """The tool's input schema and request plan for ``op``.

    Raises:
        SpecError: a parameter or body the tool cannot take, named by its pointer.
    """
    plan = RequestPlan(op.method, op.path)
    by_key: dict[tuple[str, str], tuple[Document, str, dict[str, Any]]] = {}
    for owner, pointer in ((op.path_item, op.pointer.rsplit("/", 1)[0]), (op.node, op.pointer)):
        params = owner.get("parameters") or []
        if not isinstance(params, list):
            raise SpecError(pointer_join(pointer, "parameters"), "parameters must be an array")
        for i, raw in enumerate(params):
            pdoc, ppointer, param = resolver.deref(raw, doc, pointer_join(pointer, "parameters", i))
            if not isinstance(param, dict) or not isinstance(param.get("name"), str) or \
                    param.get("in") not in _LOCATIONS:
                raise SpecError(pdoc.at(ppointer), "a parameter needs a name and an 'in' of path, query, header "
                                "or cookie")
            by_key[(param["in"], param["name"])] = (pdoc, ppointer, param)
    properties: dict[str, Any] = {}
    required: list[str] = []

    def claim(name: str, location: str) -> str:
        safe = _safe(name)
        if safe in properties:
            safe = _safe(f"{name}_{location}")
        n = 2
        base = safe
        while safe in properties:
            safe, n = f"{base}_{n}", n + 1
        return safe

    for location in _LOCATIONS:
        for (where, name), (pdoc, ppointer, param) in by_key.items():
            if where != location or (location == "header" and name.lower() in _IGNORED_HEADERS):
                continue
            if "schema" in param:
                schema = conv.convert(param["schema"], pdoc, pointer_join(ppointer, "schema"))
            else:
                found = _media(param.get("content"), ppointer, pdoc)
                if found is None:
                    raise SpecError(pdoc.at(ppointer), f"parameter {name!r} has neither schema nor content")
                schema = conv.convert(found[1].get("schema", {}), pdoc, pointer_join(ppointer, "content", found[0]))
            if isinstance(param.get("description"), str) and "description" not in schema:
                schema = {**schema, "description": param["description"]}
            arg = claim(name, location)
            properties[arg] = schema
            if location == "path" or param.get("required") is True:
                required.append(arg)
            given_style, given_explode = param.get("style"), param.get("explode")
            style = given_style if isinstance(given_style, str) else \
                ("simple" if location in ("path", "header") else "form")
            explode = given_explode if isinstance(given_explode, bool) else style == "form"
            plan.args.append(Arg(arg, location, name, style, explode))
    if "{" in op.path:
        for name in re.findall(r"{([^}]+)}", op.path):
            if not any(a.location == "path" and a.wire == name for a in plan.args):
                raise SpecError(op.pointer, f"path parameter {{{name}}} is not declared")
    body = op.node.get("requestBody")
    if body is not None:
        bdoc, bpointer, body = resolver.deref(body, doc, pointer_join(op.pointer, "requestBody"))
        found = _media(body.get("content") if isinstance(body, dict) else None, bpointer, bdoc)
        if found is None:
            raise SpecError(bdoc.at(bpointer), "the request body has no content types")
        media_type, media = found
        kind = "json" if _JSON.match(media_type) else "form" if media_type.split(";")[0] == FORM else \
            "multipart" if media_type.split(";")[0] == MULTIPART else "raw"
        plan.body, plan.content_type = kind, (None if kind == "multipart" else media_type)
        body_required = isinstance(body, dict) and body.get("required") is True
        schema = conv.root(media.get("schema", {}), bdoc, pointer_join(bpointer, "content", media_type, "schema"))
        props = schema.get("properties")
        if kind != "raw" and schema.get("type") == "object" and isinstance(props, dict) and props and \
                not any(k in schema for k in ("anyOf", "oneOf", "allOf")):
            listed = schema.get("required")
            inner_required: list[Any] = listed if isinstance(listed, list) else []
            for name, sub in props.items():
                binary = kind == "multipart" and isinstance(sub, dict) and sub.get("format") == "binary"
                arg = claim(name, "body")
                properties[arg] = _base64(sub) if binary else sub
                if body_required and name in inner_required:
                    required.append(arg)
                plan.args.append(Arg(arg, "field", name, binary=binary))
        else:
            binary = kind == "raw" and (schema.get("format") == "binary" or not media_type.startswith("text/"))
            arg = claim("body", "body")
            if kind == "raw" and not binary and "type" not in schema:
                schema = {**schema, "type": "string"}  # sent as text, whatever it holds
            properties[arg] = _base64(schema) if binary else schema
            if body_required:
                required.append(arg)
            plan.args.append(Arg(arg, "body", "body", binary=binary))
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out, plan


def _base64(schema: dict[str, Any]) -> dict[str, Any]:
    described = schema.get("description") if isinstance(schema.get("description"), str) else "The content"
    return {"type": "string", "contentEncoding": "base64", "description": f"{described} (base64)"}
