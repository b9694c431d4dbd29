"""Structured logging: RFC 5424 levels, redaction of sensitive fields, a JSON line formatter.

mcpcore behaves like a library: it never configures the root logger. ``mcpcore run`` installs
:class:`JsonFormatter` on stderr; an embedding application keeps its own logging setup.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from . import _json

__all__ = [
    "LEVELS",
    "JsonFormatter",
    "add_sensitive_fields",
    "configure_logging",
    "ensure_logging",
    "level_number",
    "logging_config",
    "normalize_level",
    "redact",
]

# RFC 5424 order, lowest severity first, mapped onto stdlib numbers.
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 60,
    "emergency": 70,
}
_ALIASES = {"warn": "warning", "err": "error", "fatal": "emergency", "silent": "emergency", "trace": "debug",
            "information": "info", "crit": "critical", "emerg": "emergency"}
logging.addLevelName(25, "NOTICE")
logging.addLevelName(60, "ALERT")
logging.addLevelName(70, "EMERGENCY")
_NAMES = {v: k for k, v in LEVELS.items()}


def normalize_level(value: str) -> str | None:
    """The canonical RFC 5424 name for ``value`` (aliases accepted), or ``None``."""
    v = value.strip().lower()
    v = _ALIASES.get(v, v)
    return v if v in LEVELS else None


def level_number(name: str) -> int:
    """The stdlib number of an RFC 5424 level name."""
    return LEVELS[name]


def level_name(number: int) -> str:
    return _NAMES.get(number, "info")


REDACTED = "[REDACTED]"
_sensitive: set[str] = {
    "password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "authorization", "auth", "cookie",
    "credential", "credentials", "privatekey", "accesskey", "secretkey", "clientsecret", "jwt", "bearer",
    "ssn", "cvv",
}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def add_sensitive_fields(names: Iterable[str]) -> None:
    """Extend the field names masked in logs and in ``notifications/message`` payloads."""
    for n in names:
        _sensitive.add(re.sub(r"[^a-z0-9]", "", n.lower()))


def _is_sensitive(key: str, cache: dict[str, bool] = {}) -> bool:  # noqa: B006 - deliberate memo
    hit = cache.get(key)
    if hit is not None:
        return hit
    words = [w.lower() for w in _WORD.findall(key)]
    result = re.sub(r"[^a-z0-9]", "", key.lower()) in _sensitive
    if not result:
        for i, w in enumerate(words):
            if w in _sensitive or (i + 1 < len(words) and w + words[i + 1] in _sensitive):
                result = True
                break
    if len(cache) < 4096:
        cache[key] = result
    return result


def redact(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` with every sensitive field masked, at any depth.

    Keys match case- and separator-insensitively and on any word of a compound name
    (``API_KEY``, ``apiKey``, ``accessToken``, ``tokenCount``). The input is never modified.
    """
    if _depth > 32:
        return "[TRUNCATED]"
    if isinstance(value, Mapping):
        return {k: (REDACTED if isinstance(k, str) and _is_sensitive(k) else redact(v, _depth + 1))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, _depth + 1) for v in value]
    return value


_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the record's extra fields,
    redacted. Fields passed as ``extra={"fields": {...}}`` are flattened into the line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": level_name(record.levelno) if record.levelno in _NAMES else record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,
        }
        for k, v in record.__dict__.items():
            if k not in _RESERVED and not k.startswith("_"):
                if k == "fields" and isinstance(v, Mapping):
                    for fk, fv in v.items():
                        line.setdefault(fk, fv)
                else:
                    line.setdefault(k, v)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _json.dumps_str(redact(line))


def logging_config(level: str = "info") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of ``mcpcore run``: mcpcore's records as JSON lines on
    stderr at ``level``, uvicorn's own warnings and errors as JSON lines too, no access log.

    ``mcpcore run`` hands it to uvicorn, which applies it in every process it starts (each
    ``--workers`` worker, the ``--reload`` child), so they all log as a single process does."""
    number = LEVELS.get(normalize_level(level) or "info", logging.INFO)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "mcpcore.logs.JsonFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {
            "mcpcore": {"handlers": ["stderr"], "level": number, "propagate": False},
            "uvicorn": {"handlers": ["stderr"], "level": logging.WARNING, "propagate": False},
            "uvicorn.error": {"level": logging.WARNING},
            "uvicorn.access": {"handlers": [], "level": logging.WARNING, "propagate": False},
        },
    }


def configure_logging(level: str = "info", stream: Any = None) -> None:
    """Send mcpcore's records to ``stream`` (stderr) as JSON lines at ``level``.

    For the CLI and examples; libraries embedding mcpcore configure logging themselves.
    """
    import logging.config

    config = logging_config(level)
    if stream is not None:
        del config["handlers"]["stderr"]["stream"]
        config["handlers"]["stderr"]["()"] = lambda: logging.StreamHandler(stream)
        config["handlers"]["stderr"].pop("class")
    logging.config.dictConfig(config)


def ensure_logging(level: str = "info") -> bool:
    """:func:`configure_logging` unless logging is configured already (a handler on the
    ``mcpcore`` logger or on the root logger); returns whether it configured it.

    An app's startup calls it, so ``uvicorn server:app`` logs JSON lines like ``mcpcore run``
    while an application that set up its own logging keeps it."""
    if logging.getLogger("mcpcore").handlers or logging.getLogger().handlers:
        return False
    configure_logging(level)
    return True
