"""RFC 6570 URI templates (levels 1-3 and explode), compiled once to a matcher.

Only matching is needed by a server: a ``resources/read`` URI is matched against each template
to pull out its variables. Simple (``{id}``), reserved (``{+path}``), fragment (``{#f}``), label
(``{.ext}``), path segment (``{/seg}``), path-style (``{;p}``) and query (``{?q}``, ``{&q}``)
expressions are understood.

What a handler may assume of a matched variable, after percent-decoding (a URI that breaks any
of these does not match, exactly as if its characters had been sent unencoded):
- no NUL or other control character, in any expression;
- a simple, label, path-segment or path-style variable holds no ``/`` or ``\\`` and is not
  ``.`` or ``..``;
- a reserved (``{+path}``) or fragment variable has no ``.`` or ``..`` segment, with ``/`` or
  ``\\`` as the separator, so ``{+path}`` cannot climb out of its root;
- query variables follow the same rules as simple ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from ..errors import ConfigurationError

__all__ = ["UriTemplate"]

_EXPR = re.compile(r"\{([^{}]*)\}")
_VAR = re.compile(r"^([A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?([A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?$")
_OPS = "+#./;?&"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SEGMENTS = re.compile(r"[/\\]")


@dataclass(frozen=True, slots=True)
class _Var:
    name: str
    explode: bool
    reserved: bool = False


def _safe(value: str, reserved: bool) -> bool:
    """Whether a decoded variable keeps the guarantees in the module docstring."""
    if _CONTROL.search(value):
        return False
    if reserved:
        return not any(seg in (".", "..") for seg in _SEGMENTS.split(value))
    return value not in (".", "..") and _SEGMENTS.search(value) is None


class UriTemplate:
    """A compiled URI template: ``UriTemplate("test://template/{id}/data").match(uri)``."""

    __slots__ = ("_query_vars", "_regex", "_vars", "template")

    def __init__(self, template: str) -> None:
        self.template = template
        self._vars: list[_Var] = []
        self._query_vars: list[_Var] = []
        pattern: list[str] = []
        pos = 0
        group = 0
        for m in _EXPR.finditer(template):
            pattern.append(re.escape(template[pos:m.start()]))
            pos = m.end()
            body = m.group(1)
            op = body[0] if body and body[0] in _OPS else ""
            specs = body[len(op):].split(",")
            if not body or not all(_VAR.match(s) for s in specs):
                raise ConfigurationError(f"invalid URI template expression {{{body}}} in {template!r}")
            vars_ = [_Var(s.split(":")[0].rstrip("*"), s.endswith("*"), op in ("+", "#")) for s in specs]
            if op in ("?", "&"):
                self._query_vars.extend(vars_)
                continue
            parts: list[str] = []
            for v in vars_:
                group += 1
                self._vars.append(v)
                name = f"g{group}"
                if op == "+":
                    parts.append(f"(?P<{name}>[^?#]+?)" if not v.explode else f"(?P<{name}>[^?#]+)")
                elif op == "#":
                    parts.append(f"(?P<{name}>.+)")
                elif op == ";":
                    parts.append(f";{re.escape(v.name)}(?:=(?P<{name}>[^;/?#]*))?")
                elif v.explode and op == "/":
                    parts.append(f"(?P<{name}>[^?#]+)")
                else:
                    parts.append(f"(?P<{name}>[^/?#,.&;]+)")
            prefix = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ""}[op]
            sep = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ""}[op]
            pattern.append(prefix + sep.join(parts))
        pattern.append(re.escape(template[pos:]))
        query = r"(?:\?(?P<__query>[^#]*))?" if self._query_vars else ""
        self._regex = re.compile("^" + "".join(pattern) + query + "$")
        names = [v.name for v in self._vars + self._query_vars]
        if len(names) != len(set(names)):
            raise ConfigurationError(f"URI template {template!r} repeats a variable")

    @property
    def variables(self) -> list[str]:
        """Variable names in the order they appear."""
        return [v.name for v in self._vars] + [v.name for v in self._query_vars]

    @property
    def required(self) -> list[str]:
        """Variables that every matching URI carries (query variables are optional)."""
        return [v.name for v in self._vars]

    @property
    def is_template(self) -> bool:
        return bool(self._vars or self._query_vars)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables of ``uri`` (percent-decoded), or ``None`` when it does not match."""
        m = self._regex.match(uri)
        if m is None:
            return None
        out: dict[str, str | list[str]] = {}
        for i, v in enumerate(self._vars, start=1):
            raw = m.group(f"g{i}")
            if raw is None:
                continue
            if v.explode:
                items = [unquote(p) for p in re.split(r"[/,]", raw) if p]
                if not all(_safe(p, v.reserved) for p in items):
                    return None
                out[v.name] = items
            else:
                value = unquote(raw)
                if not _safe(value, v.reserved):
                    return None
                out[v.name] = value
        if self._query_vars:
            q = m.group("__query") or ""
            pairs = parse_qsl(q, keep_blank_values=True)
            for v in self._query_vars:
                vals = [val for k, val in pairs if k == v.name]
                if not all(_safe(val, False) for val in vals):
                    return None
                if vals:
                    out[v.name] = vals if v.explode else vals[0]
        return out

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"
