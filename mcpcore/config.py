"""Settings from the environment, validated once at startup.

Variable names follow the reference framework (``MCP_*``) so operators of either feel at home.
Every parse error is a :class:`~mcpcore.errors.ConfigurationError` naming the variable.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import SecretStr

from .errors import ConfigurationError
from .logs import normalize_level

__all__ = ["SessionMode", "Settings", "origin_problem"]

T = TypeVar("T")
_PREFIXES = ("MCP_", "OAUTH_", "STORAGE_")
SessionModeName = Literal["stateless", "stateful", "auto"]


@dataclass(frozen=True, slots=True)
class SessionMode:
    """How 2025-era HTTP clients are served.

    ``default`` is used when ``MCP_SESSION_MODE`` is unset; ``require`` makes the app refuse to
    start over HTTP when the resolved mode is not the required one (an operator cannot silently
    switch a server whose tools need a live session to ``stateless``).
    """

    default: SessionModeName = "auto"
    require: SessionModeName | None = None


def _bool(name: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name} must be true or false, got {raw!r}")


def _int(lo: int, hi: int | None = None) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            v = int(raw.strip())
        except ValueError:
            raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
        if v < lo or (hi is not None and v > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
            raise ConfigurationError(f"{name} must be {bound}, got {v}")
        return v

    return parse


def _choice(*options: str, aliases: Mapping[str, str] | None = None) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        v = raw.strip().lower()
        v = (aliases or {}).get(v, v)
        if v not in options:
            raise ConfigurationError(f"{name} must be one of {', '.join(options)}; got {raw!r}")
        return v

    return parse


def _kind(name: str, raw: str) -> str:
    return raw.strip().lower()


def _csv(name: str, raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def origin_problem(origin: str) -> str | None:
    """Why ``origin`` can never equal a browser's ``Origin`` header (``None`` when it can): an
    origin is ``scheme://host[:port]``, or ``*`` (any) or ``null`` (sandboxed pages)."""
    if origin in ("*", "null"):
        return None
    try:
        parts = urlsplit(origin)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        return "has an invalid port"
    if not parts.scheme or not parts.netloc:
        return "has no scheme, so it never equals an Origin header, which browsers send as scheme://host[:port]"
    if "*" in parts.netloc:
        return "has a wildcard; origins are matched exactly (list each one, or * for any)"
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        return "has more than scheme://host[:port]; an Origin header never carries a path, query or user"
    if not port_ok:
        return "has an invalid port"
    return None


def _origins(name: str, raw: str) -> tuple[str, ...]:
    out = _csv(name, raw)
    for origin in out:
        problem = origin_problem(origin)
        if problem is not None:
            raise ConfigurationError(f"{name}: {origin!r} {problem}; write each origin as scheme://host[:port], e.g. "
                                     f"https://{_host_of(origin)}")
    return out


def _host_of(origin: str) -> str:
    return origin.split("://")[-1].split("/")[0].split(":")[0].replace("*.", "") or "app.example.com"


def _hostports(name: str, raw: str) -> tuple[str, ...]:
    out = []
    for part in _csv(name, raw):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigurationError(f"{name} must be comma-separated host:port pairs, got {part!r}")
        out.append(f"{host.strip('[]')}:{int(port)}")
    return tuple(out)


def _words(name: str, raw: str) -> tuple[str, ...]:
    return tuple(p for p in raw.replace(",", " ").split() if p)


def _str(name: str, raw: str) -> str:
    return raw.strip()


def _level(name: str, raw: str) -> str:
    lvl = normalize_level(raw)
    if lvl is None:
        raise ConfigurationError(f"{name} must be an RFC 5424 level (debug, info, notice, warning, error, ...)")
    return lvl


def _path(name: str, raw: str) -> str:
    v = raw.strip()
    if not v.startswith("/"):
        raise ConfigurationError(f"{name} must start with '/', got {raw!r}")
    return v.rstrip("/") or "/"


def _secret(name: str, raw: str) -> SecretStr:
    # Wrapped so the value never shows in a repr, a log line or a traceback's locals.
    return SecretStr(raw.strip())


def _env(var: str, parse: Callable[[str, Any], Any], default: Any) -> Any:
    return field(default=default, metadata={"env": var, "parse": parse})


@dataclass(frozen=True, slots=True)
class Settings:
    """Every runtime setting of an :class:`~mcpcore.McpApp`, with the variable that sets it."""

    log_level: str = _env("MCP_LOG_LEVEL", _level, "info")
    transport: str = _env("MCP_TRANSPORT_TYPE", _choice("http", "stdio"), "http")
    http_host: str = _env("MCP_HTTP_HOST", _str, "127.0.0.1")
    http_port: int = _env("MCP_HTTP_PORT", _int(0, 65535), 8000)
    endpoint_path: str = _env("MCP_HTTP_ENDPOINT_PATH", _path, "/mcp")
    max_body_bytes: int = _env("MCP_HTTP_MAX_BODY_BYTES", _int(0), 1_048_576)
    max_json_depth: int = _env("MCP_HTTP_MAX_JSON_DEPTH", _int(2, 10_000), 64)
    # The HTTP server's own ceilings (mcpcore.http_limits), applied before the app runs.
    http_max_header_bytes: int = _env("MCP_HTTP_MAX_HEADER_BYTES", _int(1024, 1_048_576), 32_768)
    http_max_headers: int = _env("MCP_HTTP_MAX_HEADERS", _int(1, 10_000), 100)
    http_header_timeout_ms: int = _env("MCP_HTTP_HEADER_TIMEOUT_MS", _int(100, 3_600_000), 10_000)
    http_body_timeout_ms: int = _env("MCP_HTTP_BODY_TIMEOUT_MS", _int(100, 3_600_000), 30_000)
    http_max_connections: int = _env("MCP_HTTP_MAX_CONNECTIONS", _int(1), 1000)
    session_mode: str | None = _env("MCP_SESSION_MODE", _choice("stateless", "stateful", "auto"), None)
    session_idle_ms: int = _env("MCP_STATEFUL_SESSION_STALE_TIMEOUT_MS", _int(1000), 1_800_000)
    max_sessions: int = _env("MCP_MAX_SESSIONS", _int(1), 10_000)
    max_sessions_per_identity: int = _env("MCP_MAX_SESSIONS_PER_IDENTITY", _int(1), 100)
    allowed_origins: tuple[str, ...] = _env("MCP_ALLOWED_ORIGINS", _origins, ())
    allowed_hosts: tuple[str, ...] = _env("MCP_ALLOWED_HOSTS", _csv, ())
    sse_keepalive_ms: int = _env("MCP_HTTP_SSE_KEEPALIVE_MS", _int(0), 15_000)
    resumability: bool = _env("MCP_HTTP_RESUMABILITY", _bool, True)
    resumability_max_events: int = _env("MCP_HTTP_RESUMABILITY_MAX_EVENTS", _int(1), 512)
    resumability_ttl_ms: int = _env("MCP_HTTP_RESUMABILITY_TTL_MS", _int(1000), 300_000)
    sse_retry_ms: int = _env("MCP_HTTP_SSE_RETRY_MS", _int(0), 1000)
    http_sse: bool = _env("MCP_HTTP_LEGACY_SSE", _bool, False)
    http_sse_max_in_flight: int = _env("MCP_HTTP_LEGACY_SSE_MAX_IN_FLIGHT", _int(1, 10_000), 64)
    list_page_size: int = _env("MCP_LIST_PAGE_SIZE", _int(1, 10_000), 100)
    max_input_rounds: int = _env("MCP_MAX_INPUT_ROUNDS", _int(1, 100), 10)
    client_request_timeout_ms: int = _env("MCP_CLIENT_REQUEST_TIMEOUT_MS", _int(100), 300_000)
    expose_stateless_session_id: bool = _env("MCP_EXPOSE_STATELESS_SESSION_ID", _bool, False)
    # Composition (mcpcore.compose): the names mounted and proxied definitions get.
    tool_name_limit: int = _env("MCP_TOOL_NAME_LIMIT", _int(1, 128), 64)
    tool_name_client_prefix: str = _env("MCP_TOOL_NAME_CLIENT_PREFIX", _str, "")
    mount_separator: str = _env("MCP_MOUNT_SEPARATOR", _str, "_")
    public_url: str | None = _env("MCP_PUBLIC_URL", _str, None)
    # A store kind's name, checked against the registry (mcpcore.store_kinds) when the app is built.
    storage_provider: str = _env("STORAGE_PROVIDER_TYPE", _kind, "memory")
    storage_path: str = _env("STORAGE_FILESYSTEM_PATH", _str, "./.storage")
    storage_max_entries: int = _env("STORAGE_MAX_ENTRIES", _int(1), 10_000)
    redis_url: str | None = _env("REDIS_URL", _str, None)
    session_store: str = _env("MCP_SESSION_STORE", _kind, "memory")
    require_shared_store: bool = _env("MCP_REQUIRE_SHARED_STORE", _bool, False)
    redis_mode: str = _env("MCP_REDIS_MODE", _choice("standalone", "cluster", "sentinel"), "standalone")
    redis_sentinels: tuple[str, ...] = _env("MCP_REDIS_SENTINELS", _hostports, ())
    redis_sentinel_master: str | None = _env("MCP_REDIS_SENTINEL_MASTER", _str, None)
    redis_sentinel_password: SecretStr | None = _env("MCP_REDIS_SENTINEL_PASSWORD", _secret, None)  # noqa: RUF009
    storage_cursor_key: str | None = _env("MCP_STORAGE_CURSOR_KEY", _str, None)
    request_state_key: str | None = _env("MCP_REQUEST_STATE_KEY", _str, None)
    auth_mode: str = _env("MCP_AUTH_MODE", _choice("none", "jwt", "oauth", "introspection", "proxy"),
                          "none")
    otel_enabled: bool = _env("OTEL_ENABLED", _bool, False)
    metrics_enabled: bool = _env("MCP_METRICS_ENABLED", _bool, False)
    metrics_path: str = _env("MCP_METRICS_PATH", _path, "/metrics")
    # Auth (see mcpcore.auth): validated by create_authenticator at startup, not here.
    auth_secret_key: SecretStr | None = _env("MCP_AUTH_SECRET_KEY", _secret, None)  # noqa: RUF009
    jwt_expected_issuer: str | None = _env("MCP_JWT_EXPECTED_ISSUER", _str, None)
    jwt_expected_audience: str | None = _env("MCP_JWT_EXPECTED_AUDIENCE", _str, None)
    oauth_issuer_url: str | None = _env("OAUTH_ISSUER_URL", _str, None)
    oauth_audience: str | None = _env("OAUTH_AUDIENCE", _str, None)
    oauth_jwks_uri: str | None = _env("OAUTH_JWKS_URI", _str, None)
    oauth_jwks_cooldown_ms: int = _env("OAUTH_JWKS_COOLDOWN_MS", _int(0), 300_000)
    oauth_jwks_timeout_ms: int = _env("OAUTH_JWKS_TIMEOUT_MS", _int(1, 600_000), 5_000)
    oauth_introspection_url: str | None = _env("OAUTH_INTROSPECTION_URL", _str, None)
    oauth_introspection_client_id: str | None = _env("OAUTH_INTROSPECTION_CLIENT_ID", _str, None)
    oauth_introspection_client_secret: SecretStr | None = _env(  # noqa: RUF009
        "OAUTH_INTROSPECTION_CLIENT_SECRET", _secret, None)
    oauth_introspection_cache_ttl_ms: int = _env("OAUTH_INTROSPECTION_CACHE_TTL_MS", _int(0), 60_000)
    oauth_introspection_timeout_ms: int = _env("OAUTH_INTROSPECTION_TIMEOUT_MS", _int(1, 600_000), 5_000)
    oauth_introspection_max_calls: int = _env("OAUTH_INTROSPECTION_MAX_CALLS", _int(1, 10_000), 64)
    oauth_introspection_max_calls_per_source: int = _env("OAUTH_INTROSPECTION_MAX_CALLS_PER_SOURCE",
                                                         _int(1, 10_000), 8)
    server_resource_identifier: str | None = _env("MCP_SERVER_RESOURCE_IDENTIFIER", _str, None)
    auth_disable_scope_checks: bool = _env("MCP_AUTH_DISABLE_SCOPE_CHECKS", _bool, False)
    # Identity beyond the bearer token (see docs/auth.md).
    auth_host_identity: bool = _env("MCP_AUTH_HOST_IDENTITY", _bool, False)
    auth_host_tenant: str | None = _env("MCP_AUTH_HOST_TENANT", _str, None)
    auth_dpop: str = _env("MCP_AUTH_DPOP", _choice("off", "allowed", "required"), "off")
    auth_dpop_algs: tuple[str, ...] = _env("MCP_AUTH_DPOP_ALGS", _csv, ())
    auth_dpop_iat_window_ms: int = _env("MCP_AUTH_DPOP_IAT_WINDOW_MS", _int(1000, 3_600_000), 300_000)
    auth_dpop_nonce_key: SecretStr | None = _env("MCP_AUTH_DPOP_NONCE_KEY", _secret, None)  # noqa: RUF009
    token_exchange_url: str | None = _env("MCP_TOKEN_EXCHANGE_URL", _str, None)
    token_exchange_client_id: str | None = _env("MCP_TOKEN_EXCHANGE_CLIENT_ID", _str, None)
    token_exchange_client_secret: SecretStr | None = _env(  # noqa: RUF009
        "MCP_TOKEN_EXCHANGE_CLIENT_SECRET", _secret, None)
    token_exchange_actor_token: SecretStr | None = _env(  # noqa: RUF009
        "MCP_TOKEN_EXCHANGE_ACTOR_TOKEN", _secret, None)
    token_exchange_audiences: tuple[str, ...] = _env("MCP_TOKEN_EXCHANGE_AUDIENCES", _csv, ())
    # MCP_AUTH_MODE=proxy: mcpcore as the authorization server, the login upstream (docs/auth.md).
    oauth_upstream_preset: str = _env("OAUTH_UPSTREAM_PRESET", _choice("oidc", "google", "github"),
                                     "oidc")
    oauth_upstream_issuer_url: str | None = _env("OAUTH_UPSTREAM_ISSUER_URL", _str, None)
    oauth_upstream_client_id: str | None = _env("OAUTH_UPSTREAM_CLIENT_ID", _str, None)
    oauth_upstream_client_secret: SecretStr | None = _env(  # noqa: RUF009
        "OAUTH_UPSTREAM_CLIENT_SECRET", _secret, None)
    oauth_upstream_scopes: tuple[str, ...] = _env("OAUTH_UPSTREAM_SCOPES", _words, ())
    oauth_upstream_tenant_claim: str = _env("OAUTH_UPSTREAM_TENANT_CLAIM", _str, "tid")
    auth_signing_key: SecretStr | None = _env("MCP_AUTH_SIGNING_KEY", _secret, None)  # noqa: RUF009
    oauth_proxy_clients: str | None = _env("OAUTH_PROXY_CLIENTS", _str, None)
    oauth_proxy_cimd_allow_private: bool = _env("OAUTH_PROXY_CIMD_ALLOW_PRIVATE", _bool, False)
    oauth_proxy_access_ttl_s: int = _env("OAUTH_PROXY_ACCESS_TTL_S", _int(60, 86_400), 3600)
    oauth_proxy_refresh_ttl_s: int = _env("OAUTH_PROXY_REFRESH_TTL_S", _int(300, 31_536_000), 2_592_000)
    oauth_proxy_consent_ttl_s: int = _env("OAUTH_PROXY_CONSENT_TTL_S", _int(0, 31_536_000), 2_592_000)
    oauth_proxy_registrations_per_minute: int = _env("OAUTH_PROXY_REGISTRATIONS_PER_MINUTE", _int(1, 100_000), 10)
    oauth_proxy_max_registrations: int = _env("OAUTH_PROXY_MAX_REGISTRATIONS", _int(1, 10_000_000), 10_000)
    # Ceilings on what a caller sends (see docs/security.md).
    cors_allowed_origins: tuple[str, ...] = _env("MCP_CORS_ALLOWED_ORIGINS", _origins, ())
    max_batch_messages: int = _env("MCP_HTTP_MAX_BATCH_MESSAGES", _int(1, 10_000), 100)
    max_batch_response_bytes: int = _env("MCP_HTTP_MAX_BATCH_RESPONSE_BYTES", _int(1024), 8_388_608)
    max_subscriptions: int = _env("MCP_MAX_SUBSCRIPTIONS_PER_SESSION", _int(0, 100_000), 100)
    max_client_metadata_bytes: int = _env("MCP_MAX_CLIENT_METADATA_BYTES", _int(256), 16_384)
    resumability_max_bytes: int = _env("MCP_HTTP_RESUMABILITY_MAX_BYTES", _int(1024), 1_048_576)
    resumability_max_total_bytes: int = _env("MCP_HTTP_RESUMABILITY_MAX_TOTAL_BYTES", _int(1024), 268_435_456)
    max_streams_per_session: int = _env("MCP_HTTP_MAX_STREAMS_PER_SESSION", _int(1, 1000), 8)
    stream_queue_max: int = _env("MCP_HTTP_STREAM_QUEUE_MAX", _int(16), 1000)
    max_streams_per_identity: int | None = _env("MCP_HTTP_MAX_STREAMS_PER_IDENTITY", _int(1), None)
    # Tasks (see docs/tasks.md).
    tasks_ttl_ms: int = _env("MCP_TASKS_TTL_MS", _int(1000), 3_600_000)
    tasks_max_ttl_ms: int = _env("MCP_TASKS_MAX_TTL_MS", _int(1000), 86_400_000)
    tasks_poll_interval_ms: int = _env("MCP_TASKS_POLL_INTERVAL_MS", _int(1, 3_600_000), 1000)
    tasks_lease_ms: int = _env("MCP_TASKS_LEASE_MS", _int(1000, 3_600_000), 10_000)
    tasks_max_per_identity: int = _env("MCP_TASKS_MAX_PER_IDENTITY", _int(1), 100)
    tasks_max_per_instance: int = _env("MCP_TASKS_MAX_PER_INSTANCE", _int(1), 1000)
    tasks_max_kept_per_identity: int = _env("MCP_TASKS_MAX_KEPT_PER_IDENTITY", _int(1), 1000)
    tasks_max_bytes_per_identity: int = _env("MCP_TASKS_MAX_BYTES_PER_IDENTITY", _int(65_536), 33_554_432)
    tasks_max_task_bytes: int = _env("MCP_TASKS_MAX_TASK_BYTES", _int(4096), 4_194_304)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read every setting from ``environ`` (default ``os.environ``); ``overrides`` win.

        Raises:
            ConfigurationError: a variable is malformed; the message names it.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            var = f.metadata.get("env")
            raw = env.get(var) if var else None
            if raw is not None and raw.strip() != "":
                values[f.name] = f.metadata["parse"](var, raw)
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigurationError(f"unknown settings: {', '.join(sorted(unknown))}")
        for f in fields(cls):
            if f.metadata.get("parse") is _origins and f.name in overrides:  # the same rule as the variable's
                _origins(f"{f.name}= ({f.metadata['env']})", ",".join(overrides[f.name]))
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @staticmethod
    def variables() -> list[tuple[str, str, Any]]:
        """``(variable, field, default)`` for every setting, for docs and ``--help``."""
        return [(f.metadata["env"], f.name, f.default) for f in fields(Settings) if "env" in f.metadata]

    @staticmethod
    def unknown_variables(environ: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
        """``(variable, closest known variable or None)`` for every ``MCP_*``, ``OAUTH_*`` and
        ``STORAGE_*`` variable of ``environ`` (default ``os.environ``) that no setting reads."""
        env = os.environ if environ is None else environ
        known = [var for var, _, _ in Settings.variables()]
        return [(name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.8)), None))
                for name in sorted(env) if name.startswith(_PREFIXES) and name not in known]

    def streams_per_caller(self) -> int:
        """Most long-lived streams one caller may hold open in this process:
        ``MCP_HTTP_MAX_STREAMS_PER_IDENTITY``, by default a quarter of ``MCP_HTTP_MAX_CONNECTIONS``
        and at most 32, so one caller never holds every connection."""
        if self.max_streams_per_identity is not None:
            return self.max_streams_per_identity
        return max(1, min(32, self.http_max_connections // 4))

    def resolve_session_mode(self, declared: SessionMode) -> str:
        """The effective 2025-era session mode: the variable wins over the code's default.

        Raises:
            ConfigurationError: the resolved mode breaks ``declared.require``.
        """
        mode = self.session_mode or declared.default
        if declared.require is not None and mode != declared.require and not (
            declared.require == "stateful" and mode == "auto"
        ):
            raise ConfigurationError(
                f"MCP_SESSION_MODE={mode} but this server requires {declared.require!r} sessions "
                "(its tools need a live session to ask the client); unset MCP_SESSION_MODE or set it to "
                f"{declared.require}"
            )
        return mode
