"""``SKILL.md`` frontmatter: the leading ``---`` YAML block, read as YAML 1.2 (core schema).

Hosts parse the same block with YAML 1.2 parsers and compare it field by field against the
entry a server lists, so the server must read it the same way: ``yes``/``on`` stay strings,
dates stay strings, ``0o17`` is octal. PyYAML implements YAML 1.1, so its implicit typing is
replaced here with the 1.2 core schema's.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["FrontmatterError", "parse_frontmatter"]

_BLOCK = re.compile(r"^---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.S)


class FrontmatterError(ValueError):
    """A ``SKILL.md`` without a readable frontmatter block."""


class _Core12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema implicit tags (null, bool, int, float)."""


_Core12Loader.yaml_implicit_resolvers = {}
_RESOLVERS: tuple[tuple[str, str, str], ...] = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     "-+0123456789."),
)
for _tag, _regex, _first in _RESOLVERS:
    _Core12Loader.add_implicit_resolver(_tag, re.compile(_regex), list(_first))
_Core12Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])


def _int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def _float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = str(loader.construct_scalar(node)).lower()  # type: ignore[arg-type]
    if text.endswith("inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def _text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Core12Loader.add_constructor("tag:yaml.org,2002:float", _float)
# Timestamps are not part of the core schema: an explicit !!timestamp stays text as well.
_Core12Loader.add_constructor("tag:yaml.org,2002:timestamp", _text)


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter mapping of a ``SKILL.md`` text; raises :class:`FrontmatterError`."""
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _BLOCK.match(text)
    if m is None:
        raise FrontmatterError("does not begin with a '---' delimited YAML frontmatter block")
    try:
        data = yaml.load(m.group(1), Loader=_Core12Loader)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter is not a YAML mapping")
    return data
