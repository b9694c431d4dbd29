"""Enrichment rules: described fields, a trailer that names real fields, capped lists disclosed."""

from __future__ import annotations

import re
from typing import Any

from ..definitions.schema import json_schema
from ..definitions.tools import ToolDefinition
from .base import Sink, Subject
from .schemas import undescribed_fields

__all__ = ["DISCLOSURE_KEYS", "check_capped_list", "check_enrichment", "is_cap_name"]

DISCLOSURE_KEYS = frozenset({"truncated", "totalCount", "total_count"})
"""Output or enrichment keys that tell the caller a list may be incomplete."""

_CAP_EXACT = frozenset({"limit", "per_page", "page_size", "max_results", "max_items", "top_k", "top_n", "n_results"})
_CAP_MAX_NOUNS = frozenset({
    "results", "items", "records", "rows", "entries", "hits", "matches", "count", "documents", "docs",
    "pages", "files", "messages", "events", "objects", "elements", "values", "lines", "tokens",
})


def is_cap_name(key: str) -> bool:
    """True for an argument that caps how many items come back: ``limit``, ``<noun>_limit``,
    ``per_page``, ``page_size``, ``max_results``, ``max_items``, ``maxRecords``... (camelCase or snake)."""
    norm = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()
    if norm in _CAP_EXACT or norm.endswith("_limit"):
        return True
    return norm.startswith("max_") and norm[4:] in _CAP_MAX_NOUNS


def _types(node: Any) -> set[str]:
    if not isinstance(node, dict):
        return set()
    t = node.get("type")
    out = {t} if isinstance(t, str) else {x for x in t if isinstance(x, str)} if isinstance(t, list) else set()
    for comb in ("anyOf", "oneOf"):
        for branch in node.get(comb) or ():
            out |= _types(branch)
    return out


def _structured(node: Any, defs: dict[str, Any]) -> bool:
    """Whether a field's schema is an object or a list (``null`` aside), other than the
    ``{before, after}`` pair ``ctx.enrich.delta`` writes and renders itself."""
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _structured(defs.get(ref.rsplit("/", 1)[-1]), defs)
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        return any(_structured(b, defs) for b in branches)
    if set(node.get("properties") or ()) == {"before", "after"}:
        return False
    return bool(_types(node) & {"object", "array"})


def check_enrichment(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``enrichment-field-description``, ``enrichment-trailer-unknown-field`` and
    ``enrichment-trailer-render``."""
    fields: set[str] = set()
    if tool.enrichment is not None:
        schema = json_schema(tool.enrichment)
        props = schema.get("properties") or {}
        fields = set(props.keys())
        for path in undescribed_fields(schema):
            sink.add("enrichment-field-description", subject,
                     f"enrichment field {path!r} has no description; it is advertised in outputSchema",
                     f"describe {path!r} with Field(description='...') in {tool.enrichment.__name__}")
        for key, prop in props.items():
            spec = tool.enrichment_trailer.get(key)
            if _structured(prop, schema.get("$defs") or {}) and not (isinstance(spec, dict)
                                                                        and callable(spec.get("render"))):
                sink.add("enrichment-trailer-render", subject,
                         f"enrichment field {key!r} is structured (an object or a list) and has no render, so the "
                         "content[] trailer shows it as raw JSON to clients that read only text",
                         f"add enrichment_trailer={{{key!r}: {{'render': fn}}}} returning a markdown line (a field "
                         "only ctx.enrich.delta writes renders itself: type it as a model of before/after)")
    for key in tool.enrichment_trailer:
        if key not in fields:
            known = ", ".join(sorted(fields)) or "none: the tool declares no enrichment model"
            sink.add("enrichment-trailer-unknown-field", subject,
                     f"enrichment_trailer names {key!r}, which is not an enrichment field (fields: {known})",
                     f"fix the key {key!r} or add the field to the enrichment model")


def check_capped_list(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``capped-list-no-truncation``."""
    caps = [k for k, v in (tool.input_schema.get("properties") or {}).items()
            if is_cap_name(str(k)) and _types(v) & {"integer", "number"}]
    if not caps or tool.output is None:
        return
    out_props: dict[str, Any] = tool.output.schema.get("properties") or {}
    lists = [k for k, v in out_props.items() if "array" in _types(v)]
    if not lists:
        return
    enrich_props: set[str] = set()
    if tool.enrichment is not None:
        enrich_props = set((json_schema(tool.enrichment).get("properties") or {}).keys())
    if DISCLOSURE_KEYS & (set(out_props) | enrich_props):
        return
    sink.add("capped-list-no-truncation", subject,
             f"input {', '.join(map(repr, caps))} caps the list in {', '.join(map(repr, lists))} but neither output "
             "nor enrichment has 'truncated' or 'totalCount'; a silently capped list reads as complete",
             "declare truncated/shown/cap in enrichment= and call ctx.enrich.truncated(shown=..., cap=...) when the "
             "cap is hit, or declare totalCount and call ctx.enrich.total(n)")
