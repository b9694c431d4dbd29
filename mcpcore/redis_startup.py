"""Redis at startup: one probe that tells a configuration the server cannot fix from one it can wait out.

A permanent problem (the password refused or missing, a database number the server lacks, a
Cluster node under ``MCP_REDIS_MODE=standalone`` or the reverse) stops startup with a
:class:`~mcpcore.errors.ConfigurationError` naming the part that needs Redis, the address (never
the password) and the fix; ``mcpcore run`` exits 2 on it. A transient one (refused, timed out,
loading) is logged and retried in the background with a line each time, and a line when Redis
answers again; meanwhile the app serves and ``/readyz`` reports the store unavailable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .config import Settings
from .errors import ConfigurationError
from .metrics import count_redis_error
from .store_kinds import store_kind

__all__ = ["RETRY_DELAYS", "RedisProblem", "check_redis", "components_needing_redis", "describe_redis", "preflight",
           "probe", "retry_until_back"]

log = logging.getLogger("mcpcore.redis")

RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0)
"""Seconds between the attempts of a transient failure (the last repeats)."""


@dataclass(frozen=True, slots=True)
class RedisProblem:
    """What the probe found: ``permanent`` (a fix is needed) or not, and the text of the line."""

    permanent: bool
    problem: str
    fix: str = ""


def components_needing_redis(settings: Settings) -> list[str]:
    """The parts that ``settings`` put on Redis, named with the setting that did it."""
    parts = []
    if store_kind("sessions", settings.session_store).redis:
        parts.append(f"the session store (MCP_SESSION_STORE={settings.session_store})")
    if store_kind("state", settings.storage_provider).redis:
        parts.append(f"ctx.state (STORAGE_PROVIDER_TYPE={settings.storage_provider})")
    return parts


def _database(settings: Settings) -> str:
    path = urlsplit(settings.redis_url or "").path.strip("/")
    return path or "0"


def _classify(exc: BaseException, settings: Settings) -> RedisProblem:
    text = str(exc)
    name = type(exc).__name__
    if name.startswith("Authentication") or "WRONGPASS" in text or "NOAUTH" in text:
        parts = urlsplit(settings.redis_url or "")
        if parts.password is None and settings.redis_mode != "sentinel":
            return RedisProblem(True, "the server requires a password and REDIS_URL gives none",
                                "put it in REDIS_URL (redis://:PASSWORD@host:port/db)")
        return RedisProblem(True, "the server refused the user name or password",
                            "put the right ones in REDIS_URL (redis://USER:PASSWORD@host:port/db)")
    if "DB index is out of range" in text or "invalid database" in text.lower():
        return RedisProblem(True, f"the server has no database {_database(settings)}",
                            "use a database number it has in REDIS_URL (0 to 15 unless its `databases` is raised)")
    if "Cluster mode is not enabled" in text:
        return RedisProblem(True, "the server is not a Redis Cluster node and MCP_REDIS_MODE=cluster",
                            "set MCP_REDIS_MODE=standalone, or point REDIS_URL at a node of the cluster")
    if "refused" in text.lower() or "Connect call failed" in text or isinstance(exc, ConnectionRefusedError):
        return RedisProblem(False, "connection refused")
    if isinstance(exc, TimeoutError) or "Timeout" in name or "timed out" in text.lower():
        return RedisProblem(False, "timed out")
    return RedisProblem(False, f"{name}: {text[:200]}" if text else name)


async def probe(client: Any, settings: Settings) -> RedisProblem | None:
    """``PING`` (and, in standalone mode, whether the server is a Cluster node); ``None`` when
    Redis answers as the settings expect."""
    try:
        await asyncio.wait_for(client.ping(), 10)
        if settings.redis_mode == "standalone":
            try:
                info = await client.info("cluster")
            except Exception as exc:
                if type(exc).__name__ != "ResponseError":  # INFO renamed away (a managed service): skip
                    raise
            else:
                if str(info.get("cluster_enabled", 0)) == "1":
                    return RedisProblem(True, "the server is a Redis Cluster node and MCP_REDIS_MODE=standalone",
                                        "set MCP_REDIS_MODE=cluster")
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        count_redis_error(exc)
        return _classify(exc, settings)
    return None


def describe_redis(settings: Settings) -> str:
    """Where the store is, without credentials (imported here only when a line needs it: the
    client module imports redis, which an app without Redis never loads)."""
    from .redis_client import describe_redis as describe

    return describe(settings)


def _refusal(component: str, settings: Settings, found: RedisProblem) -> str:
    return f"{component} cannot use Redis at {describe_redis(settings)}: {found.problem}; {found.fix}"


def _retry_line(component: str, settings: Settings, found: RedisProblem, attempt: int, delay: float) -> str:
    if found.permanent:
        return f"{_refusal(component, settings, found)} (retrying in {delay:g} s, attempt {attempt})"
    return (f"{component} cannot reach Redis at {describe_redis(settings)} ({found.problem}); retrying in "
            f"{delay:g} s (attempt {attempt}); start Redis there or correct REDIS_URL")


async def retry_until_back(client: Any, settings: Settings, component: str, first: RedisProblem,
                           sleep: Callable[[float], Any] = asyncio.sleep) -> None:
    """Probe again after each of :data:`RETRY_DELAYS` (the last repeating), a line each time,
    until Redis answers; then a line saying so."""
    attempt, found = 1, first
    while True:
        delay = RETRY_DELAYS[min(attempt - 1, len(RETRY_DELAYS) - 1)]
        log.warning(_retry_line(component, settings, found, attempt, delay),
                    extra={"fields": {"component": component, "attempt": attempt}})
        await sleep(delay)
        again = await probe(client, settings)
        if again is None:
            log.info(f"{component} reached Redis at {describe_redis(settings)} after {attempt} failed "
                     f"attempt{'s' if attempt > 1 else ''}", extra={"fields": {"component": component}})
            return
        attempt, found = attempt + 1, again


async def check_redis(client: Any, settings: Settings, component: str) -> asyncio.Task[None] | None:
    """Probe ``client`` for ``component`` at startup: a permanent problem raises; a transient one
    starts :func:`retry_until_back` (returned: the caller cancels it at shutdown).

    Raises:
        ConfigurationError: the problem needs a change of configuration (the message says which).
    """
    found = await probe(client, settings)
    if found is None:
        return None
    if found.permanent:
        raise ConfigurationError(_refusal(component, settings, found))
    return asyncio.get_running_loop().create_task(retry_until_back(client, settings, component, found))


async def preflight(settings: Settings) -> None:
    """One probe of the Redis that ``settings`` need, on a client of its own (``mcpcore run``
    before it serves: a permanent problem exits 2 before any worker starts).

    Raises:
        ConfigurationError: as :func:`check_redis`.
    """
    parts = components_needing_redis(settings)
    if not parts:
        return
    from .redis_client import create_redis_client

    client = create_redis_client(settings, needed_by=parts[0].split(" (")[1].rstrip(")"))
    try:
        found = await probe(client, settings)
    finally:
        await client.aclose()
    if found is not None and found.permanent:
        raise ConfigurationError(_refusal(" and ".join(parts), settings, found))
