"""``openapi_tools``: the operations of an OpenAPI document as tool definitions an ``McpApp`` serves."""

from __future__ import annotations

import logging
import re
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from pydantic import BaseModel, ConfigDict

from ..credentials import CredentialPolicy, NoCredentials
from ..definitions.schema import ArgsPlan
from ..definitions.tools import ToolDefinition
from ..errors import ConfigurationError, JsonRpcErrorCode, McpError
from .call import AppTransport, build_request, read_bounded
from .params import RequestPlan, input_plan
from .refs import Document, Resolver, SpecError, load_document, pointer_join
from .results import Bounds, error_for, result_for
from .schema import Converter
from .select import Operation, Route, describe, operations, select, tool_name, unique_names
from .validate import ArgumentsValidator, validator_for

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["OpenApiTools", "Skipped", "openapi_tools"]

log = logging.getLogger("mcpcore.openapi")
OPENAPI_ATTR = "__mcpcore_openapi__"
_BUILT: list[weakref.ref[OpenApiTools]] = []


def built_sets() -> list[OpenApiTools]:
    """Every tool set built in this process and still alive (``mcpcore lint`` reports their
    skipped operations)."""
    alive = [b for r in _BUILT if (b := r()) is not None]
    _BUILT[:] = [weakref.ref(b) for b in alive]
    return alive
_SUCCESS = re.compile(r"^2(\d\d|XX)$", re.IGNORECASE)
_JSON = re.compile(r"^application/([\w.+-]*\+)?json(;.*)?$", re.IGNORECASE)


class _NoModel(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class Skipped:
    """An operation that did not become a tool, and why."""

    operation: str
    """``GET /pets/{petId} (getPet)``."""
    pointer: str
    """Where in the document the problem is (``#/paths/~1pets/get/requestBody``)."""
    reason: str

    def __str__(self) -> str:
        return f"{self.operation}: {self.pointer}: {self.reason}"


class OpenApiTools(list[ToolDefinition]):
    """The tools built from a document (a list: ``McpApp(tools=...)``, ``app.include(*tools)``),
    with the operations that could not become tools in :attr:`skipped` and how long it took."""

    def __init__(self, tools: Iterable[ToolDefinition], skipped: list[Skipped], title: str, seconds: float) -> None:
        super().__init__(tools)
        self.skipped = skipped
        self.title = title
        self.seconds = seconds
        self.owner: Any = None
        """Deprecated since 0.2.0, removed in 0.4.0: what ``fastapi_tools(owner=...)`` was given (nothing reads
        it; :meth:`McpApp.include_fastapi` no longer passes the app), else ``None``."""
        _BUILT.append(weakref.ref(self))

    def report(self) -> str:
        """One line per skipped operation (empty when every selected one became a tool)."""
        return "\n".join(str(s) for s in self.skipped)


@dataclass(slots=True)
class _Target:
    client: httpx.AsyncClient | None
    app: Any
    base: str
    remote: bool
    _own: httpx.AsyncClient | None = None

    def http(self) -> httpx.AsyncClient:
        if self.client is not None:
            return self.client
        if self._own is None:
            self._own = httpx.AsyncClient(transport=AppTransport(self.app), base_url="http://app.local")
        return self._own


def _base(spec: Mapping[str, Any], client: httpx.AsyncClient | None, base_url: str | None) -> str:
    if base_url is not None:
        return base_url
    servers = spec.get("servers")
    first = servers[0].get("url") if isinstance(servers, list) and servers and isinstance(servers[0], dict) else None
    if not isinstance(first, str) or "{" in first:
        first = ""
    if first.startswith(("http://", "https://")):
        return first
    root = str(client.base_url) if client is not None and str(client.base_url) else "http://app.local"
    return root.rstrip("/") + ("/" + first.strip("/") if first.strip("/") else "")


def _output(op: Operation, resolver: Resolver, doc: Document, conv: Converter) -> tuple[dict[str, Any] | None, bool]:
    responses = op.node.get("responses")
    if not isinstance(responses, dict):
        return None, False
    codes = sorted((c for c in responses if _SUCCESS.match(str(c))), key=lambda c: (str(c).upper().endswith("XX"), c))
    for code in codes:
        rdoc, rpointer, response = resolver.deref(responses[code], doc, pointer_join(op.pointer, "responses", code))
        content = response.get("content") if isinstance(response, dict) else None
        if not isinstance(content, dict):
            continue
        for media_type, media in content.items():
            if _JSON.match(str(media_type)) and isinstance(media, dict) and "schema" in media:
                schema = conv.root(media["schema"], rdoc, pointer_join(rpointer, "content", media_type, "schema"))
                if schema.get("type") == "object" and not any(k in schema for k in ("anyOf", "oneOf", "allOf")):
                    return conv.finish(schema), False
                return conv.finish({"type": "object", "properties": {"result": schema}}), True
        return None, False
    return None, False


def _annotations(op: Operation, remote: bool) -> dict[str, Any]:
    hints: dict[str, Any] = {"readOnlyHint": op.method in ("get", "head", "options")}
    if op.method == "delete":
        hints["destructiveHint"] = True
    if op.method in ("get", "head", "options", "put", "delete"):
        hints["idempotentHint"] = True
    hints["openWorldHint"] = remote
    return hints


def _caller(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], Any]:
    def call(kwargs: dict[str, Any]) -> Any:
        return fn(**kwargs)
    return call


def _title(op: Operation) -> str | None:
    summary = op.node.get("summary")
    return summary.strip()[:100] or None if isinstance(summary, str) else None


def _handler(name: str, plan: RequestPlan, target: _Target, credentials: CredentialPolicy, bounds: Bounds,
             timeout: float, wrap: bool, out_validator: Any, strict: bool) -> Callable[..., Any]:
    route = f"{plan.method.upper()} {plan.path}"

    async def call(arguments: dict[str, Any], ctx: Context) -> Any:
        http = target.http()
        request = build_request(http, plan, target.base, arguments)
        auth = await credentials.auth(ctx)
        try:
            with anyio.fail_after(timeout):
                response = await http.send(request, auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT,
                                           stream=True)
                body, more = await read_bounded(response, bounds.max_bytes)
        except TimeoutError:
            raise McpError(JsonRpcErrorCode.Timeout, f"{route} did not answer within {timeout:g} s.",
                           {"reason": "api_timeout", "retryable": True,
                            "recovery": {"hint": "Retry in a little while, or ask for less at once."}}) from None
        except httpx.HTTPError as exc:
            raise McpError(JsonRpcErrorCode.ServiceUnavailable, f"{route} could not be reached "
                           f"({type(exc).__name__}).", {"reason": "api_unreachable", "retryable": True,
                                                        "recovery": {"hint": "Retry in a little while."}}) from exc
        if not 200 <= response.status_code < 300:
            raise error_for(response, body, more, route)
        return result_for(response, body, more, bounds=bounds, wrap=wrap, validator=out_validator, strict=strict,
                          tool=name, remote=target.remote)

    call.__name__ = call.__qualname__ = name
    return call


def openapi_tools(spec: Mapping[str, Any] | str | Path, *, routes: str | Iterable[str | Route] | None = None,
                  client: httpx.AsyncClient | None = None, app: Any = None, base_url: str | None = None,
                  credentials: CredentialPolicy | None = None, exclude: Iterable[str | Route] = (),
                  prefix: str = "", names: Mapping[str, str] | None = None, strict_output: bool = False,
                  allow_remote_refs: bool = False, base: str | Path | None = None, timeout: float = 30.0,
                  bounds: Bounds | None = None) -> OpenApiTools:
    """Tools for the operations of an OpenAPI 3.x document.

    Args:
        spec: the document: a dict, a path to a JSON or YAML file, or its text.
        routes: which operations (see :mod:`mcpcore.openapi.select`): a list of selectors,
            ``READ_ONLY`` or ``ALL``. Required: there is no every-route default.
        client: an ``httpx.AsyncClient`` for a remote API (its ``base_url`` and ``auth`` apply).
        app: an ASGI app called in process instead (the FastAPI app this server is mounted in).
        base_url: where the paths are (default: the spec's first server, under the client's base).
        credentials: what requests carry for the caller (default :class:`~mcpcore.credentials.NoCredentials`;
            never the caller's token unless :class:`~mcpcore.credentials.CallerToken` says so).
        exclude: selectors of operations to leave out of ``routes``.
        prefix: put before every tool name (counted in the 64-character budget).
        names: ``{operationId: tool name}`` overrides.
        strict_output: a response that departs from the output schema is a tool error (default:
            logged with its field paths and passed on).
        allow_remote_refs: follow ``http(s)://`` references at build time.
        base: the folder relative references are read from, for a spec given as data or text.
        timeout: seconds a call may take, response included.
        bounds: how much of a response a result carries (:class:`~mcpcore.openapi.results.Bounds`).

    An operation that cannot become a tool is logged and listed in ``.skipped`` with the JSON
    pointer of the problem; the others are built.

    Raises:
        ConfigurationError: neither or both of ``client`` and ``app``, no ``routes``, a selector
            matching nothing, a document that is not OpenAPI 3.
    """
    started = time.perf_counter()
    if (client is None) == (app is None):
        raise ConfigurationError("openapi_tools: give client= (a remote API) or app= (an ASGI app in process)")
    try:
        doc = load_document(spec, base=base)
    except SpecError as exc:
        raise ConfigurationError(f"openapi_tools: {exc}") from None
    data = doc.data
    version = data.get("openapi") if isinstance(data, dict) else None
    if not isinstance(version, str) or not version.startswith("3."):
        raise ConfigurationError("openapi_tools: not an OpenAPI 3 document (Swagger 2.0 documents need converting "
                                 "first, e.g. with swagger2openapi)")
    resolver = Resolver(doc, allow_remote=allow_remote_refs)
    chosen = select(operations(data), routes, exclude, names)
    target = _Target(client, app, _base(data, client, base_url), remote=client is not None)
    policy = credentials if credentials is not None else NoCredentials()
    limits = bounds or Bounds()
    renamed = dict(names or {})
    wanted = unique_names([tool_name(op, prefix, (r.name if r else None) or renamed.get(op.operation_id or ""))
                           for op, r in chosen])
    tools: list[ToolDefinition] = []
    skipped: list[Skipped] = []
    for (op, route), name in zip(chosen, wanted, strict=True):
        try:
            schema, plan = input_plan(op, resolver, doc, conv := Converter(resolver, "input"))
            schema = conv.finish(schema)
            out_conv = Converter(resolver, "strict-output" if strict_output else "output")
            output, wrap = _output(op, resolver, doc, out_conv)
            in_validator = ArgumentsValidator(schema)
            out_validator = validator_for(output) if output is not None else None
        except SpecError as exc:
            skipped.append(Skipped(op.label, exc.pointer, exc.reason))
            log.warning("openapi: %s is not a tool: %s: %s", op.label, exc.pointer, exc.reason)
            continue
        except RecursionError:
            skipped.append(Skipped(op.label, op.pointer, "schemas nested too deeply to convert"))
            continue
        fn = _handler(name, plan, target, policy, limits, timeout, wrap, out_validator, strict_output)
        args = ArgsPlan(_NoModel, "arguments", (), "ctx", frozenset(schema["properties"]), in_validator)
        d = ToolDefinition(name=name, description=describe(op, route.description if route else None), fn=fn,
                           args=args, call=_caller(fn), title=_title(op),
                           annotations=_annotations(op, target.remote),
                           input_schema=schema, output_schema=output, direct=fn,
                           meta={"dev.mcpcore/openapi": {"method": op.method.upper(), "path": op.path,
                                                         **({"operationId": op.operation_id}
                                                            if op.operation_id else {})}})
        tools.append(d)
    info = data.get("info")
    title = str(info.get("title", "")) if isinstance(info, dict) else ""
    built = OpenApiTools(tools, skipped, title, time.perf_counter() - started)
    for d in tools:
        setattr(d.fn, OPENAPI_ATTR, built)
    return built
