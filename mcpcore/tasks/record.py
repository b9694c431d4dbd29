"""A task as stored, and its shapes on the wire.

A store keeps, per task, an immutable :class:`TaskMeta` (who created it, for which tool, with
which arguments and client) and the fields that change: the status, its message, the outcome
(the tool's result or a JSON-RPC error, kept as the JSON text it was written as), the questions
of the current input round and the answers received so far, the attempt number and the lease
of the instance running it. :class:`TaskState` is one reading of all that.

Both eras render from it: 2026-07-28 (``io.modelcontextprotocol/tasks``: ``ttlMs``,
``pollIntervalMs``, the outcome inlined on ``tasks/get``) and 2025-11-25 (``ttl``,
``pollInterval``, the outcome only on ``tasks/result``).
"""

from __future__ import annotations

import functools
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import _json
from ..context import AuthInfo, Inbound

__all__ = ["ACTIVE", "RELATED_TASK", "TERMINAL", "TaskMeta", "TaskState", "bound", "iso", "new_task_id", "now_ms",
           "owner_of", "quota_of", "split_key", "wire_key"]

TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""Statuses a task never leaves."""
ACTIVE = frozenset({"working", "input_required"})
"""Statuses of a task that is not finished."""
RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The 2025-11-25 ``_meta`` key tying a message to its task."""


def now_ms() -> int:
    """Wall-clock milliseconds (tasks are shared across instances, so not a monotonic clock)."""
    return int(time.time() * 1000)


@functools.lru_cache(maxsize=4096)
def iso(ms: int) -> str:
    """ISO 8601 UTC with milliseconds: ``2026-07-28T10:30:00.000Z`` (memoised: a polled task's
    timestamps are rendered again on every poll)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def new_task_id() -> str:
    """An unguessable task id: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def owner_of(req: Inbound) -> str:
    """The identity a task is bound to: tenant, client id and subject of the caller, hashed.
    Every task request compares it; another caller's task reads as unknown. An anonymous caller
    of the 2025 era is bound to its session; one of 2026-07-28 has none (its task ids, which
    cannot be guessed, keep its tasks its own)."""
    auth = req.auth
    if auth is not None:
        return _owner(req.tenant_id or "", auth.client_id, auth.subject or "", "")
    session = req.session
    return _owner(req.tenant_id or "", "", "", session.id if session is not None else "")


def bound(req: Inbound) -> bool:
    """Whether ``req``'s caller is told apart from other callers (authenticated, or in a session)."""
    return req.auth is not None or req.session is not None


def quota_of(req: Inbound) -> tuple[str | None, str]:
    """The account ``req``'s tasks are counted against (``None``: the owner's own), and how a
    refusal names it. A caller told apart by :func:`bound` is counted as its owner; an anonymous
    caller without a session, whose owner every such caller shares, by its network address (as
    the rate limiter counts it), so that one client's tasks cannot lock every other client out."""
    if bound(req):
        auth = req.auth
        if auth is None:
            return None, "this session"
        return None, f"client {auth.client_id!r}" + (f", subject {auth.subject!r}" if auth.subject else "")
    scope = req.asgi_scope
    client = scope.get("client") if scope is not None else None
    address = str(client[0]) if client else "local"
    return _owner(req.tenant_id or "", "", "", "\x00ip:" + address), f"the anonymous callers at {address}"


@functools.lru_cache(maxsize=4096)
def _owner(tenant: str, client_id: str, subject: str, session: str) -> str:
    return hashlib.sha256(f"{tenant}\x00{client_id}\x00{subject}\x00{session}".encode()).hexdigest()[:32]


def wire_key(key: str, round_no: int) -> str:
    """The key of a handler's question on the wire: unique over the task's life (a handler
    may ask under the same key in two rounds)."""
    return f"{key}#{round_no}"


def split_key(wire: str) -> str:
    """The handler's key of a wire key."""
    return wire.rsplit("#", 1)[0]


@dataclass(frozen=True, slots=True)
class TaskMeta:
    """What a task was created with; never changes."""

    task_id: str
    owner: str
    tool: str
    arguments: dict[str, Any]
    era: str
    protocol_version: str
    created: int
    ttl_ms: int
    poll_ms: int
    rerun: bool = False
    tenant: str | None = None
    auth: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    client_info: dict[str, Any] | None = None
    session_id: str | None = None
    progress_token: str | int | None = None
    log_level: int | None = None
    inputs: dict[str, Any] | None = None
    request_state: str | None = None
    quota: str | None = None

    @property
    def account(self) -> str:
        """What the task is counted against: its owner, or for an anonymous caller without a
        session its network address (see :func:`quota_of`)."""
        return self.quota or self.owner

    @property
    def expires(self) -> int:
        """When the task and its result are dropped (epoch ms)."""
        return self.created + self.ttl_ms

    def to_json(self) -> bytes:
        return _json.dumps({k: getattr(self, k) for k in self.__slots__})

    @classmethod
    def from_json(cls, data: bytes | str) -> TaskMeta:
        return cls(**_json.loads(data))

    def auth_info(self) -> AuthInfo | None:
        """The caller's identity, as the handler's ``ctx.auth`` saw it (the token is not kept)."""
        a = self.auth
        if a is None:
            return None
        return AuthInfo(client_id=a["client_id"], scopes=tuple(a.get("scopes") or ()), subject=a.get("subject"),
                        tenant_id=a.get("tenant_id"), expires_at=a.get("expires_at"), claims=a.get("claims") or {})


def auth_dict(auth: AuthInfo | None) -> dict[str, Any] | None:
    """What a task keeps of the caller's identity (no token)."""
    if auth is None:
        return None
    return {"client_id": auth.client_id, "scopes": list(auth.scopes), "subject": auth.subject,
            "tenant_id": auth.tenant_id, "expires_at": auth.expires_at, "claims": auth.claims}


@dataclass(slots=True)
class TaskState:
    """One reading of a task. ``outcome`` is the JSON text of the result (``completed``) or of
    the JSON-RPC error (``failed``); ``asks`` the questions still unanswered and ``answers``
    those answered, both by wire key, as JSON text."""

    meta: TaskMeta
    status: str = "working"
    message: str | None = None
    updated: int = 0
    outcome: bytes | None = None
    asks: dict[str, bytes] = field(default_factory=dict)
    answers: dict[str, bytes] = field(default_factory=dict)
    state: str | None = None
    attempt: int = 1
    round: int = 0
    holder: str | None = None
    deadline: int | None = None
    size: int = 0
    """Bytes the store keeps for the task (its meta, outcome, questions and answers), where known."""

    @property
    def task_id(self) -> str:
        return self.meta.task_id

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def _common(self) -> dict[str, Any]:
        out: dict[str, Any] = {"taskId": self.meta.task_id, "status": self.status}
        if self.message:
            out["statusMessage"] = self.message
        out["createdAt"] = iso(self.meta.created)
        out["lastUpdatedAt"] = iso(self.updated or self.meta.created)
        return out

    def modern(self, detailed: bool = True) -> dict[str, Any]:
        """The 2026-07-28 ``Task`` (``detailed``: a ``DetailedTask``, with the result, the error
        or the pending ``inputRequests`` inlined, as ``tasks/get`` answers)."""
        out = self._common()
        out["ttlMs"] = self.meta.ttl_ms
        out["pollIntervalMs"] = self.meta.poll_ms
        if detailed:
            if self.status == "completed" and self.outcome is not None:
                out["result"] = orjson.Fragment(self.outcome)
            elif self.status == "failed" and self.outcome is not None:
                out["error"] = orjson.Fragment(self.outcome)
            elif self.status == "input_required":
                out["inputRequests"] = {k: orjson.Fragment(v) for k, v in self.asks.items()}
        return out

    def legacy(self) -> dict[str, Any]:
        """The 2025-11-25 ``Task``: a tool result with ``isError`` reads as ``failed`` there."""
        out = self._common()
        if self.status == "completed" and self.outcome is not None and _is_error(self.outcome):
            out["status"] = "failed"
        out["ttl"] = self.meta.ttl_ms
        out["pollInterval"] = self.meta.poll_ms
        return out

    def snapshot(self) -> TaskState:
        """A copy the caller may change (the meta is shared: it never changes)."""
        return TaskState(self.meta, self.status, self.message, self.updated, self.outcome,
                         dict(self.asks) if self.asks else {}, dict(self.answers) if self.answers else {},
                         self.state, self.attempt, self.round, self.holder, self.deadline, self.size)

    def handler_inputs(self) -> dict[str, Any]:
        """The answers of the last round, under the keys the handler asked with."""
        return {split_key(k): _json.loads(v) for k, v in self.answers.items()}


def _is_error(outcome: bytes) -> bool:
    return b'"isError":true' in outcome and _json.loads(outcome).get("isError") is True
