"""OpenAPI schemas (3.0 and 3.1) as the JSON Schema 2020-12 a tool advertises.

- Every ``$ref`` is resolved (:mod:`.refs`). A referenced schema is inlined where it is first
  used; met again in the same tool, or inside itself (a cycle), it becomes ``$defs/<Name>`` and a
  local ``$ref``, so a self-referencing model is finite and a shared one appears at most twice.
- 3.0's ``nullable``, boolean ``exclusiveMinimum``/``exclusiveMaximum`` and ``example`` become their
  2020-12 forms; a ``type`` array becomes ``anyOf`` branches (portable to single-type dialects);
  boolean schemas become ``{}`` / ``{"not": {}}``; ``x-*``, ``xml``, ``externalDocs`` and
  ``discriminator`` are dropped.
- Inputs leave out ``readOnly`` properties, outputs ``writeOnly`` ones.
- Outputs are *lenient* unless asked otherwise: real APIs answer with fields their description
  does not list, leave out "required" ones and grow enums, so an advertised output schema keeps
  the structure and types but not ``required``, closed ``additionalProperties``, ``enum``,
  ``const``, ``format``, patterns or bounds, and ``oneOf`` becomes ``anyOf``.
"""

from __future__ import annotations

from typing import Any, Literal

from .refs import Document, Resolver, SpecError, pointer_join

__all__ = ["Converter", "Mode"]

Mode = Literal["input", "output", "strict-output"]

_DROP = frozenset({"xml", "externalDocs", "discriminator", "nullable", "example", "$schema", "$id", "id", "$comment",
                   "$anchor", "$dynamicAnchor"})
_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
        "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema")
_BOOLEAN_OK = frozenset({"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"})
_LOOSE_DROP = frozenset({"required", "enum", "const", "format", "pattern", "minLength", "maxLength", "minimum",
                         "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
                         "uniqueItems", "minProperties", "maxProperties", "minContains", "maxContains",
                         "dependentRequired"})
_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_DEF_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class Converter:
    """Converts the schemas of one tool (one per tool and mode: ``$defs`` are the tool's own).

    Args:
        resolver: the spec's references.
        mode: ``input``, ``output`` (lenient) or ``strict-output`` (as described).
    """

    def __init__(self, resolver: Resolver, mode: Mode) -> None:
        self.resolver = resolver
        self.mode = mode
        self.defs: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}  # reference key -> $defs name
        self._done: dict[str, dict[str, Any]] = {}  # reference key -> its first (inlined) conversion
        self._stack: list[str] = []

    def convert(self, node: Any, doc: Document, pointer: str) -> dict[str, Any]:
        """``node`` (met at ``pointer`` in ``doc``) as JSON Schema 2020-12.

        Raises:
            SpecError: a reference that cannot be resolved, a schema that is not an object.
        """
        if isinstance(node, bool):
            return {} if node else {"not": {}}
        if not isinstance(node, dict):
            raise SpecError(doc.at(pointer), f"a schema must be an object, not {type(node).__name__}")
        if "$ref" in node:
            return self._ref(node, doc, pointer)
        out: dict[str, Any] = {}
        skip = "readOnly" if self.mode == "input" else "writeOnly"
        dropped: set[str] = set()
        for key, value in node.items():
            if key in _DROP or key.startswith("x-"):
                continue
            if key in _MAPS:
                if not isinstance(value, dict):
                    raise SpecError(doc.at(pointer_join(pointer, key)), f"{key} must be an object")
                sub: dict[str, Any] = {}
                for name, child in value.items():
                    if key == "properties" and isinstance(child, dict) and child.get(skip) is True:
                        dropped.add(name)
                        continue
                    sub[name] = self.convert(child, doc, pointer_join(pointer, key, name))
                out[key] = sub
            elif key in _LISTS:
                if not isinstance(value, list):
                    raise SpecError(doc.at(pointer_join(pointer, key)), f"{key} must be an array")
                out[key] = [self.convert(c, doc, pointer_join(pointer, key, i)) for i, c in enumerate(value)]
            elif key in _ONE:
                if isinstance(value, bool) and key in _BOOLEAN_OK:
                    out[key] = value
                elif key == "items" and isinstance(value, list):  # draft-04 tuple form
                    out["prefixItems"] = [self.convert(c, doc, pointer_join(pointer, key, i))
                                          for i, c in enumerate(value)]
                else:
                    out[key] = self.convert(value, doc, pointer_join(pointer, key))
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in node:
                    out[key] = node[bound]
            elif key == "required" and isinstance(value, list):
                out[key] = list(value)
            else:
                out[key] = value
        if "exclusiveMinimum" in out and node.get("exclusiveMinimum") is True:
            out.pop("minimum", None)
        if "exclusiveMaximum" in out and node.get("exclusiveMaximum") is True:
            out.pop("maximum", None)
        if dropped and isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r not in dropped]
        if "example" in node and "examples" not in out:
            out["examples"] = [node["example"]]
        if self.mode == "output":
            self._loosen(out)
        return self._types(out, node.get("nullable") is True, doc, pointer)

    def _loosen(self, out: dict[str, Any]) -> None:
        values = out.get("enum") if isinstance(out.get("enum"), list) else \
            [out["const"]] if "const" in out else None
        if values and "type" not in out:
            kinds = sorted({_type_of(v) for v in values})
            out["type"] = kinds[0] if len(kinds) == 1 else kinds
        for key in _LOOSE_DROP.intersection(out):
            del out[key]
        if out.get("additionalProperties") is False:
            del out["additionalProperties"]
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf") + out.pop("anyOf", [])

    def _types(self, out: dict[str, Any], nullable: bool, doc: Document, pointer: str) -> dict[str, Any]:
        kind = out.get("type")
        if isinstance(kind, str) and kind not in _TYPES:
            raise SpecError(doc.at(pointer_join(pointer, "type")), f"unknown type {kind[:40]!r}")
        kinds: list[str] = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
        if any(not isinstance(k, str) or k not in _TYPES for k in kinds):
            raise SpecError(doc.at(pointer_join(pointer, "type")), "type must name JSON Schema types")
        if nullable and kinds and "null" not in kinds:
            kinds.append("null")
        if len(kinds) <= 1:
            if nullable and not kinds:
                return {"anyOf": [out, {"type": "null"}]} if out else out
            return out
        rest = {k: v for k, v in out.items() if k != "type"}
        branches = [{"type": k} for k in dict.fromkeys(kinds)]
        if "anyOf" in rest:
            return {"allOf": [{"anyOf": branches}, rest]}
        return {**rest, "anyOf": branches}

    def _ref(self, node: dict[str, Any], doc: Document, pointer: str) -> dict[str, Any]:
        target_doc, target_pointer, target = self.resolver.lookup(node["$ref"], doc, doc.at(pointer))
        key = f"{target_doc.uri}{target_pointer}"
        siblings = {k: v for k, v in node.items() if k in ("description", "title", "default", "deprecated")}
        if key in self._stack or key in self._done or key in self._names:
            ref: dict[str, Any] = {"$ref": f"#/$defs/{self._name(key, target_pointer)}"}
            if key in self._done and self._names[key] not in self.defs:
                self.defs[self._names[key]] = self._done[key]
            return {**siblings, **ref} if siblings else ref
        self._stack.append(key)
        try:
            converted = self.convert(target, target_doc, target_pointer)
        finally:
            self._stack.pop()
        self._done[key] = converted
        if key in self._names:  # it referred to itself: the definition is what was just built
            self.defs[self._names[key]] = converted
            ref = {"$ref": f"#/$defs/{self._names[key]}"}
            return {**siblings, **ref} if siblings else ref
        return {**converted, **siblings} if siblings else converted

    def _name(self, key: str, pointer: str) -> str:
        found = self._names.get(key)
        if found is not None:
            return found
        last = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") or "schema"
        base = "".join(c if c in _DEF_NAME_CHARS else "_" for c in last)[:60] or "schema"
        name, n = base, 2
        taken = set(self._names.values())
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        self._names[key] = name
        return name

    def root(self, node: Any, doc: Document, pointer: str) -> dict[str, Any]:
        """``node`` converted for the root of a schema: a ``$ref`` there is inlined (the root of
        an input or output schema must be the object itself), ``$defs`` added when any."""
        schema = self.convert(node, doc, pointer)
        return self.inline(schema)

    def inline(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with a root ``$ref`` into its ``$defs`` replaced by the definition."""
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in self.defs:
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return {**self.defs[ref[8:]], **rest}
        return schema

    def finish(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with the tool's ``$defs`` attached (when any)."""
        if self.defs:
            return {**schema, "$defs": dict(self.defs)}
        return schema
