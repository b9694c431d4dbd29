"""``ctx.log``: one call, two sinks (the process log and the client's ``notifications/message``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..logs import LEVELS, redact

if TYPE_CHECKING:
    from .inbound import Inbound

__all__ = ["ContextLogger"]

_logger = logging.getLogger("mcpcore.handler")


class Logged(Protocol):
    """What the logger reads of its :class:`~mcpcore.context.Context`."""

    _req: Inbound
    extra: Mapping[str, Any] | None

    @property
    def operation(self) -> str | None: ...

    def _correlation(self) -> dict[str, Any]: ...

    def _post(self, message: dict[str, Any]) -> None: ...


class ContextLogger:
    """Request-scoped structured logger.

    Every line carries the request's correlation fields. The same call is mirrored to the client
    as ``notifications/message`` (payload ``{message, ...data}``, sensitive fields masked at any
    depth) when the client asked for logs at that level. ``MCP_LOG_LEVEL`` is a floor for both
    sinks; the client's own level can only narrow it. Delivery to the client never fails the
    handler. Treat everything logged here as client-visible.
    """

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Logged) -> None:
        self._ctx = ctx

    def debug(self, msg: str, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        self._emit("debug", msg, data, fields, None)

    def info(self, msg: str, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        self._emit("info", msg, data, fields, None)

    def notice(self, msg: str, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        self._emit("notice", msg, data, fields, None)

    def warning(self, msg: str, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        self._emit("warning", msg, data, fields, None)

    def error(self, msg: str, error: BaseException | str | None = None, data: Mapping[str, Any] | None = None,
              /, **fields: Any) -> None:
        self._emit("error", msg, data, fields, error if error is not None else _NO_ERROR)

    def critical(self, msg: str, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        self._emit("critical", msg, data, fields, None)

    def _emit(self, level: str, msg: str, data: Mapping[str, Any] | None, fields: dict[str, Any],
              error: BaseException | str | object | None) -> None:
        n = LEVELS[level]
        ctx = self._ctx
        req = ctx._req
        if n < req.services.log_floor:
            return
        merged: dict[str, Any] = dict(data) if data else {}
        if fields:
            merged.update(fields)
        err_text: str | None = None
        if error is not None and error is not _NO_ERROR:
            err_text = getattr(error, "message", None) or str(error)
        if _logger.isEnabledFor(n):
            line = dict(ctx.extra) if ctx.extra else {}
            line.update(merged)
            line.update(ctx._correlation())
            if err_text is not None:
                line["error"] = err_text
            _logger.log(n, msg, extra={"fields": line},
                        exc_info=error if isinstance(error, BaseException) and n >= 40 else None)
        cl = req.client_log_level
        if cl is not None and n >= cl:
            payload: dict[str, Any] = redact(merged) if merged else {}
            payload["message"] = msg
            if err_text is not None:
                payload["error"] = err_text
            params: dict[str, Any] = {"level": level, "data": payload}
            if ctx.operation:
                params["logger"] = ctx.operation
            try:
                ctx._post({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
            except Exception:  # fire-and-forget: a dead client never fails the handler
                _logger.debug("dropped a log notification", exc_info=True)


_NO_ERROR = object()
