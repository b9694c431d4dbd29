"""``format=`` parity by sentinel injection.

Clients forward different surfaces to the model: some read ``structuredContent``, others only
``content[]``. When a tool renders ``content[]`` with ``format=``, every output field must show
up there too, or one set of clients sees less than the other.

The check builds a value of the tool's return type whose every leaf is a distinctive sentinel
(alphanumeric strings ``zq81s0001``..., integers from 900000001, a fixed far-future date; enum
members, literals and booleans, which the type dictates, must appear as a delimited token or the
field's key name must), calls ``format`` on it and looks for each sentinel in the primitives of the
returned blocks. Unions are sampled branch by branch until every branch has been rendered once;
nesting deeper than :data:`MAX_DEPTH` is reported, not guessed; self-referencing models stop at
the first repetition (their fields were checked one level up).
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as dt
import decimal
import enum
import inspect
import re
import types
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import typing_extensions
from pydantic import AnyUrl, BaseModel

from ..content import to_wire
from ..definitions.common import type_hints
from ..definitions.tools import ToolDefinition
from .base import Sink, Subject

__all__ = ["MAX_DEPTH", "check_format_parity", "sample_output"]

MAX_DEPTH = 8
MAX_VARIANTS = 32
_SKIP = object()  # a recursive reference: containers become empty, fields None
_FIRST_NUMBER = 900_000_001
_DATE = dt.datetime(2093, 7, 19, 11, 47, 53, tzinfo=dt.UTC)
_SEQUENCES: frozenset[Any] = frozenset({list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection})
_SETS: frozenset[Any] = frozenset({set, frozenset, cabc.Set, cabc.MutableSet})
_MAPPINGS: frozenset[Any] = frozenset({dict, cabc.Mapping, cabc.MutableMapping})
_DIGIT_GROUPS = re.compile(r"\b\d{1,3}(?:[,._'\u00a0\u202f\u2009 \u2019\u066c]\d{3})+\b")
_SEPARATORS = re.compile(r"[,._'\u00a0\u202f\u2009 \u2019\u066c]")


@dataclass(frozen=True, slots=True)
class Leaf:
    """One output field and how to recognise it in rendered text.

    ``needles`` are looked for as substrings, or as delimited case-insensitive tokens when
    ``dictated`` (a value the type fixes: bool, enum, literal, date); a dictated leaf is also
    satisfied by its key name.
    """

    path: str
    key: str
    needles: tuple[str, ...]
    dictated: bool = False
    numeric: bool = False


@dataclass(slots=True)
class _Walk:
    """One sample of the output type; union choices are shared across samples for coverage."""

    variant: int
    coverage: dict[str, set[int]]
    sites: dict[str, int]
    truncated: set[str]
    leaves: list[Leaf] = field(default_factory=list)
    numbers: int = 0
    strings: int = 0
    stack: list[type] = field(default_factory=list)

    # -- leaves ------------------------------------------------------------------------------

    def _string(self, path: str, key: str) -> str:
        self.strings += 1
        s = f"zq81s{self.strings:04d}"
        self.leaves.append(Leaf(path, key, (s,)))
        return s

    def _number(self, path: str, key: str) -> int:
        n = _FIRST_NUMBER + self.numbers
        self.numbers += 1
        self.leaves.append(Leaf(path, key, (str(n),), numeric=True))
        return n

    def _dictated(self, path: str, key: str, value: Any, *needles: str) -> Any:
        self.leaves.append(Leaf(path, key, tuple(n for n in needles if n), dictated=True))
        return value

    # -- the walk ----------------------------------------------------------------------------

    def build(self, tp: Any, path: str, key: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            self.truncated.add(path or "<root>")
            return None
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.build(args[0], path, key, depth)
        if tp is None or tp is type(None):
            return None
        if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
            return self._string(path, key)
        if origin is typing.Union or origin is types.UnionType:
            options = [a for a in args if a is not type(None)]
            if not options:
                return None
            if len(options) == 1:
                return self.build(options[0], path, key, depth)
            site = f"{path}|{depth}"
            self.sites[site] = len(options)
            covered = self.coverage.setdefault(site, set())
            todo = [i for i in range(len(options)) if i not in covered]
            pick = todo[0] if todo else self.variant % len(options)
            covered.add(pick)
            return self.build(options[pick], path, key, depth)
        if origin is typing.Literal:
            value = args[0] if args else None
            return self._dictated(path, key, value, *_token_forms(value))
        if origin is not None:
            return self._generic(origin, args, path, key, depth)
        if isinstance(tp, type):
            return self._class(tp, path, key, depth)
        return self._dictated(path, key, None)  # a forward reference or an exotic annotation

    def _generic(self, origin: Any, args: tuple[Any, ...], path: str, key: str, depth: int) -> Any:
        if origin in _SEQUENCES or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
            item = self.build(args[0] if args else Any, f"{path}[]", key, depth + 1)
            items = [] if item is _SKIP else [item]
            return tuple(items) if origin is tuple else items
        if origin is tuple:
            values = [self.build(a, f"{path}[{i}]", key, depth + 1) for i, a in enumerate(args)]
            return tuple(None if v is _SKIP else v for v in values)
        if origin in _SETS:
            item = self.build(args[0] if args else Any, f"{path}[]", key, depth + 1)
            if item is _SKIP:
                return set()
            try:
                return {item}
            except TypeError:  # unhashable sample; a list still renders the same
                return [item]
        if origin in _MAPPINGS:
            self.strings += 1
            map_key: Any = f"zq81k{self.strings:04d}"
            value = self.build(args[1] if len(args) > 1 else Any, f"{path}.<key>", key, depth + 1)
            return {} if value is _SKIP else {map_key: value}
        if isinstance(origin, type):  # a parametrised class, e.g. Page[Item]
            return self._class(origin, path, key, depth)
        return self._dictated(path, key, None)

    def _class(self, tp: type, path: str, key: str, depth: int) -> Any:
        if issubclass(tp, enum.Enum):
            member = next(iter(tp))
            return self._dictated(path, key, member, *_token_forms(member.value), member.name)
        if tp is bool:
            return self._dictated(path, key, True, "true", "yes")
        if issubclass(tp, int):
            return self._number(path, key)
        if issubclass(tp, float):
            return float(self._number(path, key))
        if issubclass(tp, decimal.Decimal):
            return decimal.Decimal(self._number(path, key))
        if issubclass(tp, str):
            return self._string(path, key)
        if issubclass(tp, bytes | bytearray):
            self.strings += 1
            s = f"zq81b{self.strings:04d}"
            return self._dictated(path, key, tp(s.encode()), s)
        if issubclass(tp, dt.datetime):
            return self._dictated(path, key, _DATE, "2093")
        if issubclass(tp, dt.date):
            return self._dictated(path, key, _DATE.date(), "2093")
        if issubclass(tp, dt.time):
            return self._dictated(path, key, _DATE.timetz(), "11:47")
        if issubclass(tp, dt.timedelta):
            return self._dictated(path, key, dt.timedelta(days=4, hours=7))
        if issubclass(tp, uuid.UUID):
            u = uuid.UUID(int=0xA81C0FFEE0000000000000000000000 + self.numbers)
            self.numbers += 1
            self.leaves.append(Leaf(path, key, (str(u), u.hex)))
            return u
        if issubclass(tp, PurePath):
            return tp(self._string(path, key))
        if issubclass(tp, AnyUrl):
            return tp(f"https://{self._string(path, key)}.example/")
        if tp in _SEQUENCES or tp in _SETS or tp in _MAPPINGS or tp is tuple:
            return self._generic(tp, (), path, key, depth)
        if tp in self.stack:
            return _SKIP
        if issubclass(tp, BaseModel):
            return self._nested(tp, path, depth, self._model_fields(tp), lambda kw: tp.model_construct(**kw))
        if dataclasses.is_dataclass(tp):
            return self._nested(tp, path, depth, self._dataclass_fields(tp), lambda kw: _make_dataclass(tp, kw))
        if typing_extensions.is_typeddict(tp):
            hints = type_hints(tp)
            return self._nested(tp, path, depth, [(k, k, v) for k, v in hints.items()], dict)
        if issubclass(tp, tuple) and hasattr(tp, "_fields"):
            hints = type_hints(tp)
            fields = [(f, f, hints.get(f, Any)) for f in tp._fields]
            return self._nested(tp, path, depth, fields, lambda kw: tp(**kw))
        return self._dictated(path, key, None)

    @staticmethod
    def _model_fields(tp: type[BaseModel]) -> list[tuple[str, str, Any]]:
        return [(name, f.alias or name, f.annotation) for name, f in tp.model_fields.items()]

    @staticmethod
    def _dataclass_fields(tp: type) -> list[tuple[str, str, Any]]:
        hints = type_hints(tp)
        return [(f.name, f.name, hints.get(f.name, f.type)) for f in dataclasses.fields(tp)]

    def _nested(self, tp: type, path: str, depth: int, fields: list[tuple[str, str, Any]],
                make: Callable[[dict[str, Any]], Any]) -> Any:
        self.stack.append(tp)
        try:
            values: dict[str, Any] = {}
            for attr, wire_key, ann in fields:
                v = self.build(ann, f"{path}.{wire_key}" if path else wire_key, wire_key, depth + 1)
                values[attr] = None if v is _SKIP else v
        finally:
            self.stack.pop()
        try:
            return make(values)
        except Exception:
            return values


def _make_dataclass(tp: type, values: dict[str, Any]) -> Any:
    try:
        return tp(**values)
    except Exception:  # a validating dataclass refusing a sentinel: build it without __init__
        obj: Any = object.__new__(tp)
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        return obj


def _token_forms(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, bool):
        return ("true", "yes") if value else ("false", "no")
    return (str(value),)


def sample_output(return_type: Any, *, wrap: bool, variant: int = 0) -> tuple[Any, list[Leaf], set[str]]:
    """One sentinel sample of ``return_type``: the value, its leaves, and the paths cut by the depth limit."""
    walk = _Walk(variant, {}, {}, set())
    value = walk.build(return_type, "result" if wrap else "", "result" if wrap else "", 0)
    return (None if value is _SKIP else value), walk.leaves, walk.truncated


# -- rendering and matching --------------------------------------------------------------------------

def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "type":
                _collect(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect(v, out)
    elif isinstance(value, str | int | float | bool):
        out.append(str(value))


def _render(fmt: Callable[[Any], Any], value: Any) -> str:
    """The text of everything ``fmt(value)`` returns; raises on anything a call would fail on."""
    blocks = fmt(value)
    if inspect.isawaitable(blocks):
        close = getattr(blocks, "close", None)
        if callable(close):
            close()
        raise TypeError("format= returned an awaitable; it must be a plain function returning content blocks")
    if isinstance(blocks, str | bytes | dict | BaseModel) or not hasattr(blocks, "__iter__"):
        raise TypeError(f"format= returned {type(blocks).__name__}; it must return a list of content blocks")
    parts: list[str] = []
    for b in blocks:
        _collect(to_wire(b), parts)
    return "\n".join(parts)


def _delimited(needle: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


def _key_appears(key: str, text: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    words = {key, *re.split(r"[_\-\s]+", spaced)}
    return any(len(w) >= 3 and re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words)


def leaf_rendered(leaf: Leaf, text: str) -> bool:
    """Whether ``leaf`` shows up in ``text``."""
    digits = _DIGIT_GROUPS.sub(lambda m: _SEPARATORS.sub("", m.group(0)), text) if leaf.numeric else text
    for needle in leaf.needles:
        found = _delimited(needle, text) if leaf.dictated else needle in text or needle in digits
        if found:
            return True
    return leaf.dictated and _key_appears(leaf.key, text)


def _return_type(tool: ToolDefinition) -> Any:
    if tool.output is None:
        return None
    if tool.output.model is not None:
        return tool.output.model
    declared = getattr(tool.output.adapter, "_type", None)
    if declared is not None:
        return declared
    return type_hints(tool.fn).get("return")


def check_format_parity(subject: Subject, tool: ToolDefinition, sink: Sink) -> None:
    """``format-parity``, ``format-parity-threw`` and ``format-parity-depth-limit``."""
    if tool.format is None or tool.output is None:
        return
    return_type = _return_type(tool)
    if return_type is None:
        return
    coverage: dict[str, set[int]] = {}
    sites: dict[str, int] = {}
    truncated: set[str] = set()
    missing: dict[str, Leaf] = {}
    for variant in range(MAX_VARIANTS):
        walk = _Walk(variant, coverage, sites, truncated)
        wrap = tool.output.wrap
        value = walk.build(return_type, "result" if wrap else "", "result" if wrap else "", 0)
        try:
            text = _render(tool.format, None if value is _SKIP else value)
        except Exception as exc:
            sink.add("format-parity-threw", subject,
                     f"format= failed on a sample of the output type: {type(exc).__name__}: {exc}",
                     "make format() handle every value of the return type, one-item and empty lists and unset "
                     "optional fields included, and return a list of content blocks")
            return
        for leaf in walk.leaves:
            if leaf.path not in missing and not leaf_rendered(leaf, text):
                missing[leaf.path] = leaf
        if all(len(coverage.get(s, ())) >= n for s, n in sites.items()):
            break
    for path in sorted(truncated):
        sink.add("format-parity-depth-limit", subject,
                 f"output field {path!r} is nested deeper than {MAX_DEPTH} levels; format parity was not checked "
                 "below it",
                 "flatten the output model, or check by hand that format() renders it and silence this rule")
    for path in missing:
        sink.add("format-parity", subject,
                 f"format= does not render output field {path!r}; clients that read only content[] never see it",
                 f"render {path!r} in format(), or drop the field from the output model")
