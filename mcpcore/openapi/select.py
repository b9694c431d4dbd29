"""Which operations become tools, and their names and descriptions.

There is no "every route" default: :func:`~mcpcore.openapi.openapi_tools` wants ``routes=`` —
a list of selectors, :data:`READ_ONLY` (``GET`` and ``HEAD`` operations only) or :data:`ALL`.
A selector is an operation id (``"listPets"``), a method and path (``"GET /pets/{petId}"``; ``*``
and ``?`` match as in shell globs, ``"* /pets*"`` any method), a tag (``"tag:pets"``) or a
:class:`Route` giving the same with a name or description of its own.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

__all__ = ["ALL", "METHODS", "NAME_BUDGET", "READ_ONLY", "Operation", "Route", "describe", "select", "tool_name"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
NAME_BUDGET = 64
"""Model providers take tool names of at most 64 characters."""
DESCRIPTION_MAX = 2000
"""Characters of a tool description taken from the summary and description."""
READ_ONLY = "read-only"
"""``routes=READ_ONLY``: the ``GET`` and ``HEAD`` operations, and nothing else."""
ALL = "all"
"""``routes=ALL``: every operation (the generated-server shape curated tools do better than)."""
_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the spec."""

    method: str
    path: str
    pointer: str
    node: dict[str, Any]
    path_item: dict[str, Any]

    @property
    def operation_id(self) -> str | None:
        found = self.node.get("operationId")
        return found if isinstance(found, str) and found else None

    @property
    def tags(self) -> tuple[str, ...]:
        tags = self.node.get("tags")
        return tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()

    @property
    def label(self) -> str:
        """``GET /pets/{petId} (getPet)``: how reports name it."""
        oid = self.operation_id
        return f"{self.method.upper()} {self.path}" + (f" ({oid})" if oid else "")


@dataclass(frozen=True, slots=True)
class Route:
    """A selector with options of its own.

    Args:
        match: an operation id, ``"METHOD /path"`` (globs allowed) or ``"tag:name"``.
        name: the tool's name (default: from the operation id).
        description: the tool's description (default: the summary and description).
    """

    match: str
    name: str | None = None
    description: str | None = None

    def matches(self, op: Operation, alias: str | None = None) -> bool:
        """Whether ``op`` is selected by this route (``alias``: another name for its operation id,
        e.g. a FastAPI endpoint's function name)."""
        text = self.match.strip()
        if text.startswith("tag:"):
            return text[4:] in op.tags
        method, sep, path = text.partition(" ")
        if sep and (method == "*" or method.lower() in METHODS):
            return (method == "*" or method.lower() == op.method) and fnmatch.fnmatchcase(op.path, path.strip())
        return op.operation_id == text or (alias is not None and alias == text)


def operations(spec: Mapping[str, Any]) -> list[Operation]:
    """Every operation of ``spec`` in document order."""
    paths = spec.get("paths")
    if not isinstance(paths, dict):
        return []
    found = []
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            node = item.get(method)
            if isinstance(node, dict):
                pointer = "#/paths/" + str(path).replace("~", "~0").replace("/", "~1") + "/" + method
                found.append(Operation(method, str(path), pointer, node, item))
    return found


def select(ops: Sequence[Operation], routes: str | Iterable[str | Route] | None,
           exclude: Iterable[str | Route] = (), aliases: Mapping[str, str] | None = None,
           ) -> list[tuple[Operation, Route | None]]:
    """The operations ``routes`` selects, each with the :class:`Route` that named it (in the
    spec's order).

    Raises:
        ConfigurationError: no ``routes`` given, or a selector that matches no operation.
    """
    if routes is None:
        raise ConfigurationError("openapi_tools: say which operations become tools: routes=[...] (operation ids, "
                                 "'GET /path', 'tag:name'), routes=READ_ONLY (GET and HEAD only) or routes=ALL. "
                                 "Curated tools work better than one per route, so there is no default.")
    dropped = [r if isinstance(r, Route) else Route(r) for r in exclude]
    if isinstance(routes, str):
        if routes not in (READ_ONLY, ALL):
            raise ConfigurationError(f"openapi_tools: routes={routes!r}: give a list of selectors, READ_ONLY or ALL")
        chosen: list[tuple[Operation, Route | None]] = [(op, None) for op in ops
                                                        if routes == ALL or op.method in ("get", "head")]
    else:
        wanted = [r if isinstance(r, Route) else Route(r) for r in routes]
        chosen = []
        used: set[int] = set()
        for op in ops:
            alias = (aliases or {}).get(op.operation_id or "")
            for i, route in enumerate(wanted):
                if route.matches(op, alias):
                    chosen.append((op, route))
                    used.add(i)
                    break
        unmatched = [wanted[i].match for i in range(len(wanted)) if i not in used]
        if unmatched:
            raise ConfigurationError(f"openapi_tools: no operation matches {', '.join(map(repr, unmatched[:5]))}")
    return [(op, r) for op, r in chosen
            if not any(d.matches(op, (aliases or {}).get(op.operation_id or "")) for d in dropped)]


def tool_name(op: Operation, prefix: str = "", given: str | None = None) -> str:
    """The tool name: ``prefix`` and the operation id (else method and path), in ``[A-Za-z0-9_-]``
    and within :data:`NAME_BUDGET` (a longer one keeps its start and ends with a digest of the
    whole, so two long ids stay apart)."""
    base = given or op.operation_id or f"{op.method}_{op.path}"
    name = _NAME.sub("_", prefix + base).strip("_") or op.method
    if len(name) <= NAME_BUDGET:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return name[:NAME_BUDGET - 9].rstrip("_") + "_" + digest


def describe(op: Operation, given: str | None = None) -> str:
    """The summary, then the description (bounded), then the method and path."""
    if given:
        return given
    parts = [p.strip() for p in (op.node.get("summary"), op.node.get("description"))
             if isinstance(p, str) and p.strip()]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    text = "\n\n".join(parts)
    if len(text) > DESCRIPTION_MAX:
        text = text[:DESCRIPTION_MAX - 1].rstrip() + "…"
    route = f"{op.method.upper()} {op.path}"
    return f"{text}\n\n({route})" if text else f"Calls {route}."


def unique_names(names: list[str]) -> list[str]:
    """``names`` with repeats suffixed ``_2``, ``_3``... (still within the budget)."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 2
        while candidate in seen:
            suffix = f"_{n}"
            candidate, n = name[:NAME_BUDGET - len(suffix)] + suffix, n + 1
        seen.add(candidate)
        out.append(candidate)
    return out
