"""The terminal side of the client verbs: readable log lines, one-line summaries of
definitions, printing a tool's result, progress, and answering a form on the terminal."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

import orjson

from .. import _json

__all__ = ["ReadableFormatter", "ask_on_terminal", "compact", "dump_json", "pretty", "print_result", "progress_printer",
           "signature"]

_PLAIN = frozenset({"name", "msg", "args", "levelname", "levelno", "pathname", "filename", "module", "exc_info",
                    "exc_text", "stack_info", "lineno", "funcName", "created", "msecs", "relativeCreated", "thread",
                    "threadName", "processName", "process", "message", "asctime", "taskName"})


class ReadableFormatter(logging.Formatter):
    """``12:01:02 INFO    mcpcore.app  the message  key=value`` (for a person at a terminal)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        extras: dict[str, Any] = {}
        for k, v in record.__dict__.items():
            if k in _PLAIN or k.startswith("_"):
                continue
            if k == "fields" and isinstance(v, Mapping):
                extras.update(v)
            else:
                extras[k] = v
        tail = "  " + " ".join(f"{k}={v}" for k, v in extras.items()) if extras else ""
        line = f"{stamp} {record.levelname:<7} {record.name}  {record.getMessage()}{tail}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def pretty(value: Any) -> str:
    """``value`` as JSON indented by two spaces (UTF-8 kept)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def compact(value: Any) -> str:
    """``value`` as JSON on one line."""
    return _json.dumps_str(value)


def dump_json(value: Any, out: TextIO | None = None) -> None:
    """``value`` as indented JSON on stdout."""
    print(pretty(value), file=out or sys.stdout)


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(compact(v) for v in schema["enum"][:6]) + ("|..." if len(schema["enum"]) > 6 else "")
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if t == "array":
        return f"{_type_of(schema.get('items'))}[]"
    if isinstance(t, str):
        return t
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_type_of(s) for s in schema[key])
    return "object" if "properties" in schema else "any"


def signature(tool: Mapping[str, Any]) -> str:
    """``name(query: string, limit?: integer)`` of a tool's ``inputSchema``."""
    raw = tool.get("inputSchema")
    schema: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = set(schema.get("required") or [])
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    params = [f"{n}{'' if n in required else '?'}: {_type_of(p)}" for n, p in props.items()]
    return f"{tool.get('name')}({', '.join(params)})"


def first_line(text: Any) -> str:
    """The first line of a description (empty when there is none)."""
    return str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""


def print_result(result: Mapping[str, Any], out: TextIO | None = None) -> None:
    """A ``CallToolResult`` for a person: its text, a line for each other block, and the
    structured content when there is no text."""
    out = out or sys.stdout
    texts = 0
    for block in result.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            print(block.get("text", ""), file=out)
            texts += 1
        elif kind in ("image", "audio"):
            size = len(str(block.get("data", ""))) * 3 // 4
            print(f"[{kind} {block.get('mimeType', '?')}, about {size} bytes]", file=out)
        elif kind == "resource":
            res = block.get("resource") or {}
            print(f"[resource {res.get('uri')}]", file=out)
            if "text" in res:
                print(res["text"], file=out)
        elif kind == "resource_link":
            print(f"[link {block.get('uri')}]", file=out)
    if not texts and "structuredContent" in result:
        dump_json(result["structuredContent"], out)


def progress_printer(out: TextIO | None = None) -> Any:
    """A progress callback writing ``progress 50/100: message`` lines on stderr."""
    stream = out or sys.stderr

    def show(value: float, total: float | None, message: str | None) -> None:
        amount = f"{value:g}/{total:g}" if total else f"{value:g}"
        print(f"progress {amount}" + (f": {message}" if message else ""), file=stream, flush=True)

    return show


def _ask_field(name: str, prop: Mapping[str, Any], required: bool) -> Any:
    kind = prop.get("type")
    hint = prop.get("description") or prop.get("title") or ""
    choices = prop.get("enum") or [o.get("const") for o in prop.get("oneOf") or [] if isinstance(o, dict)]
    default = prop.get("default")
    label = f"  {name}" + (f" ({hint})" if hint else "")
    if choices:
        label += " [" + "/".join(str(c) for c in choices) + "]"
    elif kind == "boolean":
        label += " [y/n]"
    if default is not None:
        label += f" (default {default})"
    while True:
        raw = input(label + ": ").strip()
        if not raw:
            if default is not None or not required:
                return default
            print("    an answer is required (Ctrl+D declines)", file=sys.stderr)
            continue
        try:
            if kind == "boolean":
                if raw.lower() in ("y", "yes", "true", "1"):
                    return True
                if raw.lower() in ("n", "no", "false", "0"):
                    return False
                raise ValueError("answer y or n")
            value: Any = int(raw) if kind == "integer" else float(raw) if kind == "number" else raw
        except ValueError as exc:
            print(f"    {exc}", file=sys.stderr)
            continue
        if choices and value not in choices:
            print(f"    choose one of {', '.join(str(c) for c in choices)}", file=sys.stderr)
            continue
        return value


def ask_on_terminal(params: dict[str, Any]) -> dict[str, Any]:
    """Answer an ``elicitation/create`` form by asking at the terminal (Ctrl+D declines)."""
    if params.get("mode") == "url":
        print(f"\n{params.get('message')}\nOpen: {params.get('url')}", file=sys.stderr)
        try:
            input("Press Enter when done (Ctrl+D declines): ")
        except EOFError:
            return {"action": "decline"}
        return {"action": "accept"}
    schema = params.get("requestedSchema") or {}
    required = set(schema.get("required") or [])
    print(f"\n{params.get('message')}", file=sys.stderr)
    content: dict[str, Any] = {}
    try:
        for name, prop in (schema.get("properties") or {}).items():
            value = _ask_field(name, prop if isinstance(prop, dict) else {}, name in required)
            if value is not None:
                content[name] = value
    except EOFError:
        print("\n  declined", file=sys.stderr)
        return {"action": "decline"}
    except KeyboardInterrupt:
        print("\n  cancelled", file=sys.stderr)
        return {"action": "cancel"}
    return {"action": "accept", "content": content}
