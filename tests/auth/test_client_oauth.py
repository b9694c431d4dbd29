"""``Client(url, auth=OAuth(...))`` against mcpcore's authorization-server mode in front of the real
oidc-provider: from the first 401 to a called tool in both eras, with dynamic registration, a
client ID metadata document and a configured client; tokens refreshed when the server's access
token has expired and when the client's clock says so; a wrong state, a wrong issuer and a
refusal stopping the flow before any code is exchanged; step-up on insufficient_scope; an app in
process; two instances sharing Redis; the token file's permissions and lock. The login
is the provider's, the consent mcpcore's, walked by the scripted browser of tests/auth/upstream.py."""

from __future__ import annotations

import asyncio
import html
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from mcpcore.client import Client, FileTokenStore, MemoryTokenStore, OAuth, OAuthError
from mcpcore.client.oauth import parse_challenge
from tests.auth.docserver import DocServer
from tests.auth.upstream import Browser, UpstreamProvider, register, run_proxied
from tests.servers import libfaketime, server_log

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/oauth/callback"
ACCESS_TTL = 60  # the shortest OAUTH_PROXY_ACCESS_TTL_S


@pytest.fixture(scope="module")
def server_clock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's wall-clock offset (libfaketime reads it on every call): a test moves the
    server's clock forward, never back, instead of waiting."""
    path = tmp_path_factory.mktemp("clock") / "offset"
    path.write_text("+0\n")
    return path


@pytest.fixture(scope="module")
def server(upstream: UpstreamProvider, docs: DocServer, server_clock: Path) -> Iterator[str]:
    """tests.apps.proxied as the authorization server (built from code, trusting the docs' CA),
    its wall clock set by ``server_clock``."""
    clock = {"LD_PRELOAD": libfaketime(), "FAKETIME_TIMESTAMP_FILE": str(server_clock),
             "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1"}
    with run_proxied(upstream, MCP_AUTH_MODE="none", TEST_CIMD_CA=str(docs.ca), MCP_LOG_LEVEL="info",
                     OAUTH_PROXY_ACCESS_TTL_S=str(ACCESS_TTL), OAUTH_PROXY_REGISTRATIONS_PER_MINUTE="100",
                     **clock) as base:
        yield base


class Person:
    """``on_authorize``: walks the browser through the provider's login and mcpcore's consent, and
    returns the redirect's query; remembers each authorization URL it was sent to."""

    def __init__(self, redirect: str = REDIRECT, tamper: dict[str, str] | None = None,
                 decision: str = "allow") -> None:
        self.redirect = redirect
        self.decision = decision
        self.tamper = tamper or {}
        self.urls: list[str] = []

    async def __call__(self, url: str) -> dict[str, str]:
        self.urls.append(url)

        def walk() -> dict[str, str]:
            browser = Browser(self.redirect)
            try:
                landing = browser.walk(url)
                back = re.search(r'href="([^"]+)">Return to the application<', landing.page)
                if back:  # an error page: the person goes back to the application
                    landing = browser.walk(html.unescape(back.group(1)))
                elif not landing.query:
                    assert "Allow" in landing.page, landing.page[:300]
                    landing = browser.decide(landing.page, self.decision)
                return {**landing.query, **self.tamper}
            finally:
                browser.close()

        return await anyio.to_thread.run_sync(walk)

    def query(self, i: int = -1) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.urls[i]).query).items()}


async def whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


def token_requests(base: str, since: int) -> list[str]:
    return re.findall(r"authorization server: (POST /oauth/token|GET /oauth/authorize)", server_log(base)[since:])


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_from_the_first_401_to_a_called_tool_with_dynamic_registration(
        server: str, upstream: UpstreamProvider, era: str) -> None:
    upstream.set_user(f"dora-{era}", tid="initech")
    person, store = Person(), MemoryTokenStore()
    auth = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store, client_name="desk")
    async with Client(f"{server}/mcp", era=era, auth=auth) as client:
        assert client.era == era
        assert {t["name"] for t in await client.list_tools()} == {"whoami", "provider_profile"}
        me = await whoami(client)
        assert (await client.call_tool("provider_profile", {}))["structuredContent"] == {
            "status": 200, "sub": f"dora-{era}"}
    assert auth.authorizations == 1 and len(person.urls) == 1
    q = person.query()
    assert q["resource"] == f"{server}/mcp" and q["scope"] == "tools:read"
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43
    assert q["redirect_uri"] == REDIRECT and q["client_id"].startswith("mcp-")
    record = store.records[f"{server}/mcp"]
    assert record["client"]["client_id"] == q["client_id"] and record["client"]["registered"] is True
    assert me == {"subject": f"dora-{era}", "tenant": "initech", "client": q["client_id"], "scopes": ["tools:read"]}
    assert record["tokens"]["refresh_token"] and record["issuer"] == server

    # A second client with the same store signs in no more: the tokens (and the client) are kept.
    again = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store)
    async with Client(f"{server}/mcp", era=era, auth=again) as client:
        assert (await whoami(client))["subject"] == f"dora-{era}"
    assert again.authorizations == 0 and len(person.urls) == 1


@pytest.mark.anyio
async def test_a_client_id_metadata_document(server: str, upstream: UpstreamProvider, docs: DocServer) -> None:
    url = docs.json("/mcpcore-desk.json", {"client_id": f"{docs.base}/mcpcore-desk.json", "client_name": "mcpcore desk",
                                           "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                                           "grant_types": ["authorization_code", "refresh_token"],
                                           "response_types": ["code"]})
    fetched = docs.hits.get("/mcpcore-desk.json", 0)
    upstream.set_user("erin", tid="initech")
    person, store = Person(), MemoryTokenStore()
    auth = OAuth(on_authorize=person, redirect_uri=REDIRECT, client_metadata_url=url, store=store)
    async with Client(f"{server}/mcp", auth=auth) as client:
        assert await whoami(client) == {"subject": "erin", "tenant": "initech", "client": url,
                                        "scopes": ["tools:read"]}
    assert person.query()["client_id"] == url and docs.hits["/mcpcore-desk.json"] > fetched
    assert "registered" not in store.records[f"{server}/mcp"]["client"]


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["none", "client_secret_basic", "client_secret_post"])
async def test_a_configured_client(server: str, upstream: UpstreamProvider, method: str) -> None:
    """A client registered beforehand (here through the server's registration endpoint): public,
    or confidential with its secret (sent as HTTP Basic, the server offering both)."""
    registered = register(server, REDIRECT, client_name="configured desk", token_endpoint_auth_method=method)
    upstream.set_user("fay", tid="initech")
    person, store = Person(), MemoryTokenStore()
    auth = OAuth(on_authorize=person, redirect_uri=REDIRECT, client_id=registered["client_id"],
                 client_secret=registered.get("client_secret"), store=store)
    async with Client(f"{server}/mcp", auth=auth) as client:
        assert (await whoami(client))["client"] == registered["client_id"]
        store.records[f"{server}/mcp"]["tokens"]["access_token"] = "refused"
        assert (await whoami(client))["client"] == registered["client_id"]  # refreshed with the secret too
    assert person.query()["client_id"] == registered["client_id"] and auth.refreshes == 1
    assert await auth.logout() is True  # the revocation request authenticates the client the same way
    if method != "none":
        wrong = OAuth(on_authorize=Person(), redirect_uri=REDIRECT, client_id=registered["client_id"],
                      client_secret="not-the-secret")
        with pytest.raises(OAuthError, match=r"^the authorization server refused the code: invalid_client "
                                             r"\(client authentication failed\): sign in again$"):
            async with Client(f"{server}/mcp", auth=wrong):
                pass


@pytest.mark.anyio
async def test_refresh_when_the_client_sees_expiry_and_when_the_server_refuses(
        server: str, upstream: UpstreamProvider) -> None:
    upstream.set_user("gus", tid="initech")
    now = [time.time()]
    person, store = Person(), MemoryTokenStore()
    auth = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store, clock=lambda: now[0])
    key = f"{server}/mcp"
    async with Client(key, auth=auth) as client:
        await whoami(client)
        first = dict(store.records[key]["tokens"])
        assert first["expires_at"] == pytest.approx(now[0] + ACCESS_TTL, abs=5)

        # The client's clock passes the expiry: the token is refreshed before the request is sent.
        now[0] += ACCESS_TTL
        mark = len(server_log(server))
        assert (await whoami(client))["subject"] == "gus"
        second = dict(store.records[key]["tokens"])
        assert auth.refreshes == 1 and second["access_token"] != first["access_token"]
        assert second["refresh_token"] != first["refresh_token"]  # rotated by the server
        assert token_requests(server, mark) == ["POST /oauth/token"]

        # A token the server refuses (here: damaged) is refreshed and the request retried; five
        # requests refused at once wait for one refresh.
        store.records[key]["tokens"]["access_token"] = second["access_token"][:-4] + "AAAA"
        mark = len(server_log(server))
        answers = await asyncio.gather(*(whoami(client) for _ in range(5)))
        assert {a["subject"] for a in answers} == {"gus"}
        assert auth.refreshes == 2 and auth.authorizations == 1 and len(person.urls) == 1
        assert token_requests(server, mark) == ["POST /oauth/token"]


@pytest.mark.anyio
async def test_processes_sharing_a_token_file_refresh_one_at_a_time(server: str, upstream: UpstreamProvider,
                                                                    tmp_path: Path) -> None:
    """Two clients, each with its own FileTokenStore on one file (as two commands would be), see
    the token expire at once: the file's lock lets one refresh, and the other reads what it kept.
    Without it the second would present the rotated refresh token, and the server, seeing it
    reused, would end the grant."""
    upstream.set_user("olga", tid="initech")
    path, now, key = tmp_path / "oauth.json", [time.time()], f"{server}/mcp"
    person = Person()
    first = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=FileTokenStore(path), clock=lambda: now[0])
    second = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=FileTokenStore(path), clock=lambda: now[0])
    async with Client(key, auth=first) as one, Client(key, auth=second) as two:
        assert len(person.urls) == 1  # the second client found the first one's tokens in the file
        now[0] += ACCESS_TTL
        mark = len(server_log(server))
        answers = await asyncio.gather(whoami(one), whoami(two))
        assert [a["subject"] for a in answers] == ["olga", "olga"]
        assert token_requests(server, mark) == ["POST /oauth/token"]
        assert first.refreshes + second.refreshes == 1 and len(person.urls) == 1
        assert (await whoami(one))["subject"] == "olga"  # the grant lives on


@pytest.mark.anyio
async def test_refresh_after_the_access_token_really_expires(server: str, upstream: UpstreamProvider,
                                                              server_clock: Path) -> None:
    """The server's clock, not the client's: the token is sent until the server refuses it. The
    server's clock is moved past the token's lifetime (the client's lags an hour behind)."""
    upstream.set_user("hal", tid="initech")
    person, store = Person(), MemoryTokenStore()
    lagging = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store, clock=lambda: time.time() - 3600)
    async with Client(f"{server}/mcp", era="modern", auth=lagging) as client:
        await whoami(client)
        used = store.records[f"{server}/mcp"]["tokens"]["access_token"]
        ahead = int(server_clock.read_text().strip().lstrip("+")) + ACCESS_TTL + 2
        server_clock.write_text(f"+{ahead}\n")
        mark = len(server_log(server))
        assert (await whoami(client))["subject"] == "hal"
    assert lagging.refreshes == 1 and lagging.authorizations == 1
    assert store.records[f"{server}/mcp"]["tokens"]["access_token"] != used
    assert token_requests(server, mark) == ["POST /oauth/token"]


@pytest.mark.anyio
async def test_a_wrong_state_is_refused_before_any_exchange(server: str, upstream: UpstreamProvider) -> None:
    upstream.set_user("ian", tid="initech")
    store = MemoryTokenStore()
    auth = OAuth(on_authorize=Person(tamper={"state": "someone-elses-state"}), redirect_uri=REDIRECT, store=store)
    mark = len(server_log(server))
    with pytest.raises(OAuthError) as caught:
        async with Client(f"{server}/mcp", auth=auth) as client:
            await client.list_tools()
    assert caught.value.message == ("the sign-in came back with a state this client did not send (a stale or "
                                    "forged redirect); nothing was exchanged: sign in again")
    assert token_requests(server, mark) == ["GET /oauth/authorize"]  # no code was exchanged
    assert "tokens" not in store.records[f"{server}/mcp"]


@pytest.mark.anyio
async def test_another_issuer_and_a_refusal_stop_the_flow(server: str, upstream: UpstreamProvider) -> None:
    upstream.set_user("jo", tid="initech")
    auth = OAuth(on_authorize=Person(tamper={"iss": "https://evil.example"}), redirect_uri=REDIRECT)
    with pytest.raises(OAuthError, match=r"came back from https://evil.example, not http://127\.0\.0\.1:\d+ "):
        async with Client(f"{server}/mcp", auth=auth):
            pass
    upstream.set_user("kim", tid="initech", refuse=True)  # the provider's login says no
    try:
        auth = OAuth(on_authorize=Person(), redirect_uri=REDIRECT)
        with pytest.raises(OAuthError, match=r"^the authorization server refused the sign-in: access_denied: sign in "
                                             r"again, and allow the access$"):
            async with Client(f"{server}/mcp", auth=auth):
                pass
    finally:
        upstream.set_user("kim", tid="initech")
    auth = OAuth(on_authorize=Person(decision="deny"), redirect_uri=REDIRECT)  # the consent page says no
    with pytest.raises(OAuthError, match=r"^the authorization server refused the sign-in: access_denied"):
        async with Client(f"{server}/mcp", auth=auth):
            pass


@pytest.mark.anyio
async def test_on_authorize_may_return_code_and_state(server: str, upstream: UpstreamProvider) -> None:
    upstream.set_user("lee", tid="initech")
    person = Person()

    async def pair(url: str) -> tuple[str, str]:
        q = await person(url)
        return q["code"], q["state"]

    async with Client(f"{server}/mcp", auth=OAuth(on_authorize=pair, redirect_uri=REDIRECT)) as client:
        assert (await whoami(client))["subject"] == "lee"


@pytest.mark.anyio
async def test_logout_revokes_the_grant(server: str, upstream: UpstreamProvider) -> None:
    upstream.set_user("max", tid="initech")
    store = MemoryTokenStore()
    auth = OAuth(on_authorize=Person(), redirect_uri=REDIRECT, store=store)
    async with Client(f"{server}/mcp", auth=auth) as client:
        await whoami(client)
    refresh = store.records[f"{server}/mcp"]["tokens"]["refresh_token"]
    record = dict(store.records[f"{server}/mcp"])
    assert await auth.logout() is True and f"{server}/mcp" not in store.records
    assert await auth.logout() is None
    # The refresh token is dead at the server: a client holding it must sign in again.
    await store.save(f"{server}/mcp", {**record, "tokens": {"access_token": "x", "refresh_token": refresh}})
    person = Person()
    async with Client(f"{server}/mcp", auth=OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store)) as client:
        await whoami(client)
    assert len(person.urls) == 1


def test_the_challenge_parser() -> None:
    value = ('Bearer realm="mcp", error="insufficient_scope", scope="a b", '
             'resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", DPoP algs="ES256"')
    assert parse_challenge(value) == {"realm": "mcp", "error": "insufficient_scope", "scope": "a b",
                                      "resource_metadata": "https://x.example/.well-known/oauth-protected-resource/mcp"}
    assert parse_challenge('Basic realm="x"') == {} and parse_challenge(None) == {}


@pytest.mark.anyio
async def test_the_token_file_is_for_its_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    store = FileTokenStore()
    assert store.path == tmp_path / "config" / "mcpcore" / "oauth.json"
    await store.save("https://a.example/mcp", {"tokens": {"access_token": "t1"}})
    await store.save("https://b.example/mcp", {"tokens": {"access_token": "t2"}})
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert await FileTokenStore(store.path).load("https://a.example/mcp") == {"tokens": {"access_token": "t1"}}
    os.chmod(store.path, 0o644)
    assert await store.clear("https://a.example/mcp") is True and await store.clear("https://a.example/mcp") is False
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert await store.servers() == ["https://b.example/mcp"]
    assert [p.name for p in store.path.parent.iterdir()] == ["oauth.json"]  # no temporary file left


@pytest.mark.anyio
async def test_step_up_on_insufficient_scope(server: str, upstream: UpstreamProvider) -> None:
    """Asked for too little: the 403's ``insufficient_scope`` signs in again for more."""
    upstream.set_user("nell", tid="initech")
    person, store = Person(), MemoryTokenStore()
    auth = OAuth(on_authorize=person, redirect_uri=REDIRECT, store=store, scopes=["openid"])
    async with Client(f"{server}/mcp", auth=auth) as client:
        assert {t["name"] for t in await client.list_tools()} == {"whoami", "provider_profile"}
        assert len(person.urls) == 1 and person.query()["scope"] == "openid"
        assert (await whoami(client))["scopes"] == ["tools:read"]
    assert len(person.urls) == 2 and person.query()["scope"] == "openid tools:read"
    assert auth.authorizations == 2


@pytest.mark.anyio
async def test_an_app_in_process(upstream: UpstreamProvider) -> None:
    """``Client(app, auth=OAuth(...))``: the app is its own authorization server, served in this
    process; the client's discovery, registration and token requests reach it in process, and so
    does the person's browser (a walk through an ASGI transport for the app's origin, the real
    network for the provider)."""
    from mcpcore import McpApp
    from mcpcore.auth.proxy import OAuthProxy, Upstream
    from mcpcore.client import StreamingASGITransport
    from tests.apps.proxied import whoami as whoami_tool
    from tests.auth.upstream import SIGNING_KEY, UPSTREAM_SCOPES

    public = "http://127.0.0.1:1"  # loopback, never reached over the network: served in process
    client_id, secret = upstream.register_app(f"{public}/oauth/callback")
    proxy = OAuthProxy(public_url=public, signing_key=SIGNING_KEY, upstream=Upstream(
        issuer_url=upstream.issuer, client_id=client_id, client_secret=secret, scopes=tuple(UPSTREAM_SCOPES.split())))
    app = McpApp("in-process", "1.0.0", tools=[whoami_tool], auth=proxy)
    upstream.set_user("uma", tid="initech")
    await app.startup()
    try:
        async def person(url: str) -> dict[str, str]:
            async with httpx.AsyncClient(mounts={public: StreamingASGITransport(app)}, timeout=20) as browser:
                method, data = "GET", None
                for _ in range(20):
                    if url.startswith(REDIRECT):
                        return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                    r = await browser.request(method, url, data=data)
                    method, data = "GET", None
                    if r.status_code in (302, 303):
                        url = str(httpx.URL(url).join(r.headers["location"]))
                    else:
                        assert "Allow" in r.text, r.text[:300]
                        action, fields = Browser.form(r.text)
                        url, method, data = str(httpx.URL(url).join(action)), "POST", {**fields, "decision": "allow"}
            raise AssertionError("too many redirects")

        auth = OAuth(on_authorize=person, redirect_uri=REDIRECT)
        async with Client(app, url=f"{public}/mcp", auth=auth) as client:
            me = await whoami(client)
        assert me["subject"] == "uma" and me["client"].startswith("mcp-") and auth.authorizations == 1
    finally:
        await app.shutdown()


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_two_instances_sharing_redis(upstream: UpstreamProvider, tmp_path_factory: pytest.TempPathFactory,
                                           era: str) -> None:
    """The same flow against two instances sharing a Redis server behind a round-robin proxy
    (tests/scale/harness.py): every request, the client's and the browser's, goes to the next
    instance, so the authorization starts on one and its callback lands on the other; a refresh
    is served by whichever comes next."""
    from tests.auth.test_proxy_clients import Deployment, spread_over_instances
    from tests.auth.upstream import proxy_env
    from tests.scale.harness import cluster, proxy
    from tests.servers import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = proxy_env(upstream, base, MCP_LOG_LEVEL="info")
    with cluster(tmp_path_factory.mktemp("pair"), "tests.apps.proxied:app", n=2, extra_env=env) as pair, \
            proxy(pair.urls, port=port):
        deployment = Deployment(base, pair.urls)
        upstream.set_user(f"pat-{era}", tid="initech")
        now, store = [time.time()], MemoryTokenStore()
        auth = OAuth(on_authorize=Person(), redirect_uri=REDIRECT, store=store, clock=lambda: now[0])
        with spread_over_instances(deployment):
            async with Client(f"{base}/mcp", era=era, auth=auth) as client:
                assert (await whoami(client))["subject"] == f"pat-{era}"
                now[0] += 7200  # past the default hour: refreshed before the next request
                assert (await client.call_tool("provider_profile", {}))["structuredContent"] == {
                    "status": 200, "sub": f"pat-{era}"}
        assert auth.authorizations == 1 and auth.refreshes == 1
