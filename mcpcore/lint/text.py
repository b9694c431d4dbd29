"""Descriptions and names: present, specific, well-formed, unique and portable."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..definitions.common import NAME_RE
from ..definitions.resources import ResourceDefinition
from ..definitions.tools import ToolDefinition
from .base import Sink, Subject

__all__ = ["check_description", "check_name", "check_names_across"]

MIN_DESCRIPTION_WORDS = 3
PORTABLE_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_PLACEHOLDERS = frozenset({
    "todo", "tbd", "fixme", "xxx", "wip", "placeholder", "description", "desc", "no description",
    "tool", "a tool", "the tool", "this tool", "my tool", "resource", "a resource", "prompt", "a prompt",
    "test", "a test", "testing", "n a", "na", "none", "null", "nothing", "foo", "bar", "baz", "stuff",
    "does stuff", "does things", "something", "some tool", "example", "an example", "lorem ipsum",
    "add description", "add a description", "description here", "insert description",
})
_PLACEHOLDER_START = re.compile(r"^(?:todo|tbd|fixme|xxx)\b")


def _words(text: str) -> str:
    """Lower-case words of ``text``, with camelCase and separators split."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return " ".join(re.findall(r"[a-z0-9]+", spaced.lower()))


def description_problem(text: str, name: str) -> str | None:
    """Why ``text`` is not a specific description of ``name``, or ``None`` when it is."""
    words = _words(text)
    if words in _PLACEHOLDERS or _PLACEHOLDER_START.match(words) or "lorem ipsum" in words:
        return f"description {text.strip()!r} is a placeholder"
    if words == _words(name):
        return f"description {text.strip()!r} only repeats the name"
    count = len(text.split())
    if count < MIN_DESCRIPTION_WORDS:
        return f"description {text.strip()!r} has {count} word(s); a model choosing between definitions needs more"
    return None


def check_description(subject: Subject, sink: Sink) -> None:
    """``description-required`` and ``description-specific``."""
    d = subject.definition
    text = d.description or ""
    if not text.strip():
        optional = isinstance(d, ResourceDefinition)
        sink.add("description-required", subject,
                 f"{subject.kind} has no description" + ("; clients show it to the model" if optional else
                                                         "; several clients refuse such definitions"),
                 "pass description= or write a docstring saying what it does and when to use it",
                 severity="warning" if optional else None)
        return
    problem = description_problem(text, subject.name)
    if problem is not None:
        sink.add("description-specific", subject, problem,
                 "write at least a sentence: what it does, what it returns, when to use it")


def check_name(subject: Subject, sink: Sink) -> None:
    """``name-format`` and, for tools, ``tool-name-portable``."""
    name = subject.name
    if not isinstance(name, str) or not NAME_RE.match(name):
        sink.add("name-format", subject, f"name {name!r} is not 1-128 letters, digits, '_', '-' or '.'",
                 "rename it using only letters, digits, '_', '-' and '.'")
        return
    if isinstance(subject.definition, ToolDefinition) and not PORTABLE_TOOL_NAME.match(name):
        why = "contains '.'" if "." in name else f"is {len(name)} characters long"
        suggestion = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
        sink.add("tool-name-portable", subject,
                 f"tool name {why}; OpenAI and Anthropic function names allow only [A-Za-z0-9_-]{{1,64}}, so "
                 "clients bridging to them reject or rename the tool",
                 f"rename it, e.g. name={suggestion!r}")


def _collision_key(name: str) -> str:
    return re.sub(r"[\s_.\-]+", "", name).lower()


def check_names_across(subjects: Sequence[Subject], sink: Sink) -> None:
    """``name-unique`` and ``name-collision`` within tools, within prompts; unique URIs for resources."""
    for kind in ("tool", "prompt", "resource"):
        group = [s for s in subjects if s.kind == kind]
        seen: dict[str, Subject] = {}
        folded: dict[str, Subject] = {}
        for s in group:
            d = s.definition
            ident = d.uri if isinstance(d, ResourceDefinition) else s.name
            if ident in seen:
                what = "URI" if kind == "resource" else "name"
                sink.add("name-unique", s, f"{kind} {what} {ident!r} is declared twice",
                         f"rename or remove one of the two {kind}s named {ident!r}")
                continue
            seen[ident] = s
            if kind == "resource":
                continue
            key = _collision_key(s.name)
            other = folded.get(key)
            if other is not None:
                sink.add("name-collision", s,
                         f"{kind} name {s.name!r} differs from {kind} {other.name!r} only by case or separators; "
                         "models confuse them and some clients normalise names",
                         f"merge the two {kind}s, or rename one so the names differ in words")
            else:
                folded[key] = s
