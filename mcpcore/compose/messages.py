"""The JSON-RPC side of a proxied request: who the caller is to the backend, what the proxy declares
for it, and the backend's answer read into a result or an :class:`~mcpcore.McpError`."""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING, Any

from .. import _json
from ..errors import JsonRpcErrorCode, McpError
from ..protocol.extensions import TASKS
from ..protocol.versions import Era

if TYPE_CHECKING:
    from ..context import Inbound

__all__ = ["ANSWERABLE", "caller_key", "capabilities_for", "reply_of", "result_of", "wants_tasks"]

ANSWERABLE = frozenset({"elicitation", "sampling", "roots"})
_TASK_REQUESTS = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/update", "tasks/list"})


def caller_key(req: Inbound | None) -> str:
    """Who calls, as the key of its backend session: the tenant, client and subject of its token."""
    auth = req.auth if req is not None else None
    if auth is None:
        return "anonymous:" + ((req.tenant_id if req is not None else None) or "")
    tenant = auth.tenant_id or (req.tenant_id if req is not None else None) or ""
    raw = f"{tenant}\0{auth.client_id}\0{auth.subject or ''}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def capabilities_for(req: Inbound | None, tasks_asked: bool = False) -> dict[str, Any]:
    """What the proxy declares to the backend: the caller's abilities to answer questions (which the
    proxy relays), never the caller's other capabilities; the tasks extension when the caller
    declared it, or when a 2025 caller's request is about tasks (``tasks_asked``)."""
    if req is None:
        return {}
    caps = req.client_capabilities or {}
    out = {k: v for k, v in caps.items() if k in ANSWERABLE}
    tasks = (caps.get("extensions") or {}).get(TASKS) if isinstance(caps.get("extensions"), dict) else None
    if tasks is None and tasks_asked:
        tasks = {}
    if tasks is not None:  # the caller takes tasks: the backend may answer with one (the proxy routes tasks/*)
        out["extensions"] = {TASKS: tasks}
    return out


def wants_tasks(method: str, params: Any, req: Inbound | None) -> bool:
    """A 2025 caller's request about tasks (a ``tools/call`` asking for one, or ``tasks/*``):
    sent to a 2026-07-28 backend, it declares the tasks extension for the caller."""
    if req is None or req.era is not Era.LEGACY:
        return False
    return method in _TASK_REQUESTS or (method == "tools/call" and isinstance(params, dict)
                                                           and isinstance(params.get("task"), dict))


def reply_of(status: int, kind: str, text: str, rid: Any) -> dict[str, Any]:
    reply: Any = None
    if kind.startswith("text/event-stream"):  # a whole SSE answer, read: the message answering ``rid``
        for line in text.splitlines():
            if line.startswith("data:"):
                with contextlib.suppress(ValueError):
                    msg = _json.loads(line[5:].strip())
                    if isinstance(msg, dict) and msg.get("id") == rid:
                        reply = msg
    else:
        try:
            reply = _json.loads(text) if text else None
        except ValueError:
            reply = None
    if isinstance(reply, dict) and ("result" in reply or "error" in reply):
        return reply
    code = JsonRpcErrorCode.Unauthorized if status == 401 else JsonRpcErrorCode.Forbidden if status == 403 \
        else JsonRpcErrorCode.InternalError
    raise McpError(code, f"the backend answered HTTP {status} without a JSON-RPC message", {"httpStatus": status})


def result_of(reply: dict[str, Any]) -> dict[str, Any]:
    err = reply.get("error")
    if isinstance(err, dict):
        raise McpError(err.get("code", JsonRpcErrorCode.InternalError), str(err.get("message") or ""),
                       err.get("data"))
    result = reply.get("result")
    return dict(result) if isinstance(result, dict) else {}
