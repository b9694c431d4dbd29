"""With auth on, no route of any transport serves an unauthenticated caller; the side routes are
public by design and reveal nothing a caller without a token may not know; every route is
Host-checked on a loopback server."""

from __future__ import annotations

import httpx
import pytest

from mcpcore.testing.asgi import StreamingASGITransport
from tests.conftest import example_app

pytestmark = pytest.mark.anyio
SECRET = "r" * 40
METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS")


def client(app: object, host: str = "127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=StreamingASGITransport(app), base_url=f"http://{host}:8000")  # type: ignore[arg-type]


async def test_every_route_refuses_or_is_public_by_design() -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET, http_sse=True)
    transports = (app.path, "/sse", "/messages")
    side = app.side_routes()
    assert set(side) >= {"/healthz", "/readyz", "/", "/.well-known/mcp.json",
                         "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}
    tool_names = set(app.registry.tools)
    async with app.lifespan(), client(app) as http:
        for path in transports:
            for method in METHODS:
                body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}' if method == "POST" else None
                r = await http.request(method, path, content=body, headers={
                    "content-type": "application/json", "accept": "application/json, text/event-stream"})
                # Refused before anything is served: 401, or 405 for a method the route has not.
                expected = (204,) if method == "OPTIONS" and path == app.path else (401, 405)
                assert r.status_code in expected, (method, path, r.status_code)
                assert "access-control-allow-origin" not in r.headers
                assert not any(name in r.text for name in tool_names), (method, path)
        for path in side:
            r = await http.get(path)
            assert r.status_code in (200, 503), path
            assert not any(f'"{name}"' in r.text or f"<code>{name}</code>" in r.text for name in tool_names), path
            head = await http.head(path)
            assert head.status_code == r.status_code and head.content == b""
            assert (await http.post(path)).status_code == 405
        assert (await http.get("/anything-else")).status_code == 404
        card = (await http.get("/.well-known/mcp.json")).json()
        assert card["authentication"]["required"] is True and "tools" not in card


async def test_landing_lists_definitions_without_auth() -> None:
    app = example_app()
    async with app.lifespan(), client(app) as http:
        card = (await http.get("/.well-known/mcp.json")).json()
        assert {t["name"] for t in card["tools"]} == set(app.registry.tools)
        assert (await http.head("/")).status_code == 200


@pytest.mark.parametrize("bound", ["127.0.0.2", "::1"])
async def test_every_route_is_host_checked_on_any_loopback_address(bound: str) -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET)
    url_host = f"[{bound}]" if ":" in bound else bound
    async with app.lifespan(), client(app, url_host) as http:
        for path in (app.path, *app.side_routes()):
            r = await http.get(path, headers={"host": "evil.example", "accept": "text/event-stream"})
            assert r.status_code == 403, path
            assert "evil.example" not in r.headers.get("www-authenticate", "")
            ok = await http.get(path, headers={"accept": "text/event-stream"})
            assert ok.status_code != 403, path


async def test_metadata_does_not_reflect_a_malformed_host() -> None:
    app = example_app(auth_mode="jwt", auth_secret_key=SECRET)
    async with app.lifespan(), client(app, "10.1.2.3") as http:  # an in-process request: nothing is sent anywhere
        r = await http.get("/.well-known/oauth-protected-resource", headers={"host": 'x"><script>'})
        assert r.status_code == 403
        r = await http.get("/.well-known/oauth-protected-resource", headers={"host": "mcp.example.com"})
        assert r.status_code == 200 and r.json()["resource"] == "http://mcp.example.com/mcp"
