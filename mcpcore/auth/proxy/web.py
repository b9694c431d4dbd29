"""The HTTP plumbing of the authorization server's endpoints: parameters, bounded form bodies,
JSON, HTML and redirect answers, the browser cookie."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ... import _json
from ...asgi_types import Receive, Scope, Send
from .pages import PAGE_HEADERS

__all__ = ["BROWSER_COOKIE", "Duplicate", "TooLarge", "browser_of", "header", "params", "read_body", "redirect",
           "redirect_with", "send_bytes", "send_json", "send_page", "with_browser_cookie"]

BROWSER_COOKIE = "mcpcore_as_browser"
MAX_FORM_BYTES = 16 * 1024
Headers = Sequence[tuple[bytes, bytes]]


class TooLarge(Exception):
    """The body is over its limit."""


class Duplicate(Exception):
    """A parameter is given twice (RFC 6749 §3.1: each at most once)."""


def params(raw: str) -> dict[str, str]:
    """URL-encoded parameters; an empty value counts as absent.

    Raises:
        Duplicate: a parameter appears twice.
    """
    out: dict[str, str] = {}
    for key, value in parse_qsl(raw, keep_blank_values=True):
        if key in out:
            raise Duplicate(key)
        if value != "":
            out[key] = value
    return out


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header."""
    for k, v in scope["headers"]:
        if k == name:
            return str(v.decode("latin-1"))
    return None


async def read_body(receive: Receive, limit: int = MAX_FORM_BYTES) -> bytes:
    """The request body, at most ``limit`` bytes.

    Raises:
        TooLarge: the body is longer.
    """
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body += message.get("body", b"")
        if len(body) > limit:
            raise TooLarge
        if not message.get("more_body"):
            break
    return bytes(body)


def browser_of(scope: Scope) -> str | None:
    """This browser's id from its cookie (a random value this server set)."""
    raw = header(scope, b"cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        name, _, value = part.strip().partition("=")
        if name == BROWSER_COOKIE and 20 <= len(value) <= 64 and value.replace("-", "").replace("_", "").isalnum():
            return value
    return None


def with_browser_cookie(scope: Scope, secure: bool) -> tuple[str, list[tuple[bytes, bytes]]]:
    """This browser's id, and the ``Set-Cookie`` header when it had none: one fixed-size cookie,
    whatever the number of clients or flows."""
    found = browser_of(scope)
    if found is not None:
        return found, []
    new = secrets.token_urlsafe(24)
    attrs = f"{BROWSER_COOKIE}={new}; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000" + ("; Secure" if secure else "")
    return new, [(b"set-cookie", attrs.encode())]


async def send_bytes(send: Send, status: int, body: bytes, headers: Headers) -> None:
    """An answer with ``body``."""
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def send_json(send: Send, status: int, obj: Any, headers: Headers = ()) -> None:
    """A JSON answer that is never cached (token responses, errors)."""
    await send_bytes(send, status, _json.dumps(obj), [(b"content-type", b"application/json"),
                                                     (b"cache-control", b"no-store"), (b"pragma", b"no-cache"),
                                                     *headers])


async def send_page(send: Send, status: int, page: bytes, headers: Headers = ()) -> None:
    """An HTML page (consent, error)."""
    await send_bytes(send, status, page, [*PAGE_HEADERS, *headers])


async def redirect(send: Send, url: str, headers: Headers = (), status: int = 302) -> None:
    """A redirect to ``url``."""
    await send_bytes(send, status, b"", [(b"location", url.encode()), (b"cache-control", b"no-store"), *headers])


def redirect_with(uri: str, values: dict[str, str | None]) -> str:
    """``uri`` with ``values`` added to its query (the authorization response)."""
    parts = urlsplit(uri)
    extra = urlencode({k: v for k, v in values.items() if v is not None})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
