"""``mcpcore list``, ``mcpcore call`` and ``mcpcore inspect``: a server from the shell.

On a terminal they print for a person (progress as it comes); piped, they print JSON.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from .. import _json
from ..client import Client, Handler, OAuthError, task_of
from ..errors import McpError
from .console import ask_on_terminal, compact, dump_json, first_line, print_result, progress_printer, signature
from .targets import Target, UsageError, connect, load_mcp_app, parse_target

__all__ = ["call_command", "inspect_command", "list_command"]

KINDS = ("tools", "prompts", "resources", "templates")


def _as_json(args: argparse.Namespace) -> bool:
    return bool(args.json_output) or not sys.stdout.isatty()


def _connect(args: argparse.Namespace, target: Target, **more: Any) -> Any:
    return connect(target, era=args.era, token=args.token, headers=args.header, seconds=args.timeout,
                   verbose=args.verbose, oauth=args.oauth, oauth_client=args.oauth_client,
                   oauth_timeout=args.oauth_timeout, **more)


async def _items(client: Client, kind: str) -> list[dict[str, Any]]:
    if kind == "tools":
        return await client.list_tools()
    if kind == "prompts":
        return await client.list_prompts() if "prompts" in client.server_capabilities else []
    if kind == "resources":
        return await client.list_resources() if "resources" in client.server_capabilities else []
    return await client.list_resource_templates() if "resources" in client.server_capabilities else []


def _line(kind: str, item: dict[str, Any]) -> str:
    if kind == "tools":
        head = signature(item)
    elif kind == "prompts":
        params = [f"{a.get('name')}{'' if a.get('required') else '?'}" for a in item.get("arguments") or []]
        head = f"{item.get('name')}({', '.join(params)})"
    elif kind == "resources":
        mime = f"  [{item['mimeType']}]" if item.get("mimeType") else ""
        head = f"{item.get('uri')}  {item.get('name', '')}{mime}"
    else:
        head = f"{item.get('uriTemplate')}  {item.get('name', '')}"
    desc = first_line(item.get("description"))
    return f"{head}\n    {desc}" if desc else head


async def list_command(args: argparse.Namespace) -> int:
    """``mcpcore list TARGET [tools|prompts|resources|templates]``."""
    words = list(args.words)
    kind = "tools"
    if words and words[-1] in KINDS and (args.stdio is not None or len(words) == 2):
        kind = words.pop()
    if len(words) > (0 if args.stdio is not None else 1):
        raise UsageError(f"unexpected {' '.join(words[1:] or words)!r}: mcpcore list TARGET [{'|'.join(KINDS)}]")
    target = parse_target(words[0] if words else None, args.stdio)
    async with _connect(args, target) as client:
        items = await _items(client, kind)
    if _as_json(args):
        dump_json(items)
    elif not items:
        print(f"{target} has no {kind}", file=sys.stderr)
    else:
        for item in items:
            print(_line(kind, item))
    return 0


def _value(raw: str, prop: Any) -> Any:
    """A ``key=value`` value: kept a string where the schema wants one, else JSON when it parses."""
    types = prop.get("type") if isinstance(prop, dict) else None
    wants_string = types == "string" or (isinstance(types, list) and types == ["string"])
    if wants_string:
        return raw
    try:
        return _json.loads(raw)
    except ValueError:
        return raw


async def call_command(args: argparse.Namespace) -> int:
    """``mcpcore call TARGET TOOL key=value ... [--json ARGS] [--task]``."""
    words = list(args.words)
    if args.stdio is None:
        if not words:
            raise UsageError("name the server and the tool: mcpcore call TARGET TOOL key=value ...")
        target = parse_target(words.pop(0), None)
    else:
        target = parse_target(None, args.stdio)
    if not words or "=" in words[0]:
        raise UsageError("name the tool to call: mcpcore call TARGET TOOL key=value ...")
    name, pairs = words[0], words[1:]
    arguments: dict[str, Any] = {}
    if args.json_args is not None:
        try:
            arguments = _json.loads(args.json_args)
        except ValueError as exc:
            raise UsageError(f"--json is not JSON ({exc}); write an object, e.g. --json '{{\"query\": \"red\"}}'") \
                from None
        if not isinstance(arguments, dict):
            raise UsageError("--json takes a JSON object of arguments, e.g. --json '{\"query\": \"red\"}'")
    terminal = sys.stdout.isatty() and not args.json_output
    handlers: dict[str, Handler] = {"roots/list": lambda _p: {"roots": [{"uri": Path.cwd().as_uri(), "name": "cwd"}]}}
    if sys.stdin.isatty():
        handlers["elicitation/create"] = ask_on_terminal
    async with _connect(args, target, handlers=handlers) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        tool = tools.get(name)
        if tool is None:
            close = difflib.get_close_matches(name, list(tools), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "`mcpcore list` shows the tools"
            raise UsageError(f"{target} has no tool {name!r}: {hint}")
        props = (tool.get("inputSchema") or {}).get("properties") or {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep or not key:
                raise UsageError(f"{pair!r}: write arguments as key=value (or all of them with --json)")
            arguments[key] = _value(raw, props.get(key))
        on_progress = progress_printer() if terminal or sys.stderr.isatty() else None
        result = await client.call_tool(name, arguments, task=True if args.task else None, on_progress=on_progress)
        task = task_of(result)
        if task is not None:
            if sys.stderr.isatty():
                print(f"task {task['taskId']}: {task.get('status')}", file=sys.stderr)
            show = _status_printer() if sys.stderr.isatty() else None
            result = await client.wait_task(task["taskId"], on_status=show)
    if terminal:
        print_result(result, sys.stderr if result.get("isError") else sys.stdout)
    else:
        dump_json(result)
    return 1 if result.get("isError") else 0


def _status_printer() -> Any:
    seen: list[str] = []

    def show(task: dict[str, Any]) -> None:
        line = f"task: {task.get('status')}" + (f": {task['statusMessage']}" if task.get("statusMessage") else "")
        if not seen or seen[-1] != line:
            seen.append(line)
            print(line, file=sys.stderr, flush=True)

    return show


async def inspect_command(args: argparse.Namespace) -> int:
    """``mcpcore inspect TARGET``: identity, capabilities, every definition with its schemas,
    the server card, and (for module:app) the lint findings."""
    words = list(args.words)
    if len(words) > (0 if args.stdio is not None else 1):
        raise UsageError("mcpcore inspect takes one server: a URL, module:app, or --stdio 'CMD'")
    target = parse_target(words[0] if words else None, args.stdio)
    report: dict[str, Any] = {}
    async with _connect(args, target) as client:
        report["serverInfo"] = client.server_info
        report["era"] = client.era
        report["protocolVersion"] = client.protocol_version
        report["capabilities"] = client.server_capabilities
        report["instructions"] = client.instructions
        report["serverCard"] = await client.server_card()
        for kind, key in (("tools", "tools"), ("prompts", "prompts"), ("resources", "resources"),
                          ("templates", "resourceTemplates")):
            report[key] = await _items(client, kind)
    if target.module is not None:
        from ..lint import lint_app

        report["lint"] = lint_app(load_mcp_app(target.module)).to_json()
    if _as_json(args):
        dump_json(report)
    else:
        _print_inspection(report)
    return 0


def _print_inspection(report: dict[str, Any]) -> None:
    info = report.get("serverInfo") or {}
    print(f"{info.get('name', '?')} {info.get('version', '')}  ({report['protocolVersion']}, {report['era']} era)")
    if report.get("instructions"):
        print(f"instructions: {report['instructions']}")
    caps = report.get("capabilities") or {}
    print("capabilities: " + ", ".join(
        k + (f" ({', '.join(sorted(v))})" if isinstance(v, dict) and v else "") for k, v in sorted(caps.items())))
    card = report.get("serverCard")
    print("server card: " + (", ".join(f"{t.get('type')} {t.get('url')}" for t in card.get("transports") or [])
                             if card else "none"))
    for key, kind in (("tools", "tools"), ("prompts", "prompts"), ("resources", "resources"),
                      ("resourceTemplates", "templates")):
        items = report.get(key) or []
        print(f"\n{kind} ({len(items)})")
        for item in items:
            print("  " + _line(kind, item).replace("\n", "\n  "))
            for schema_key in ("inputSchema", "outputSchema"):
                if schema_key in item:
                    print(f"      {schema_key}: {compact(item[schema_key])}")
            if kind == "prompts" and item.get("arguments"):
                print(f"      arguments: {compact(item['arguments'])}")
    lint = report.get("lint")
    if lint is not None:
        findings = lint.get("findings") or []
        print(f"\nlint ({len(findings)} finding{'s' if len(findings) != 1 else ''})")
        for f in findings:
            print(f"  {f.get('severity')} {f.get('rule')} {f.get('kind')}:{f.get('name')}: {f.get('message')} "
                  f"(fix: {f.get('fix')})")


def report_error(verb: str, exc: BaseException) -> int:
    """Print a verb's failure as one line; the exit code (2: usage or connection, 1: the server)."""
    if isinstance(exc, UsageError):
        print(f"mcpcore {verb}: {exc}", file=sys.stderr)
        return 2
    if isinstance(exc, OAuthError):
        print(f"mcpcore {verb}: signing in failed: {exc.message}", file=sys.stderr)
        return 2
    if isinstance(exc, McpError):
        print(f"mcpcore {verb}: error {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    raise exc
