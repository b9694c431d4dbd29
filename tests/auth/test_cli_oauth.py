"""``mcpcore list/call/inspect --oauth`` and ``mcpcore logout`` as subprocesses against mcpcore's
authorization-server mode in front of the real oidc-provider. The person's browser is
tests/auth/oauth_browser.py given as ``MCPCORE_OAUTH_BROWSER`` (it signs in, allows, and goes back
to the CLI's loopback redirect), or the test itself following the URL the CLI prints when there is
no browser. Tokens are kept under a temporary ``XDG_CONFIG_HOME``."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.auth.docserver import DocServer
from tests.auth.upstream import Browser, UpstreamProvider, register, run_proxied
from tests.servers import ROOT, server_log

pytestmark = pytest.mark.slow
HOOK = shlex.join([sys.executable, str(ROOT / "tests" / "auth" / "oauth_browser.py")])
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "MCPCORE_OAUTH"))}


@pytest.fixture(scope="module")
def server(upstream: UpstreamProvider, docs: DocServer) -> Iterator[str]:
    with run_proxied(upstream, MCP_AUTH_MODE="none", TEST_CIMD_CA=str(docs.ca), MCP_LOG_LEVEL="info",
                     OAUTH_PROXY_REGISTRATIONS_PER_MINUTE="100") as base:
        yield base


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: its own config folder, the scripted browser, its log."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "MCPCORE_OAUTH_BROWSER": HOOK,
            "TEST_BROWSER_LOG": str(tmp_path / "browser.log")}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpcore", *args], cwd=ROOT, env={**ENV, **env},
                          capture_output=True, text=True, timeout=120)


def browsed(env: dict[str, str]) -> list[str]:
    """The lines the scripted browser logged: the authorization URL, the loopback page's answer."""
    path = Path(env["TEST_BROWSER_LOG"])
    return path.read_text().splitlines() if path.exists() else []


def token_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "mcpcore" / "oauth.json"


def kept(env: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(token_file(env).read_text())["servers"])


def test_list_signs_in_then_call_and_inspect_reuse_the_tokens(server: str, upstream: UpstreamProvider,
                                                                home: dict[str, str]) -> None:
    upstream.set_user("nina", tid="initech")
    url = f"{server}/mcp"
    listed = cli("list", url, "--oauth", "--era", "modern", env=home)
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)} == {"whoami", "provider_profile"}
    seen = browsed(home)
    assert len(seen) == 2 and seen[1] == "200 Signed in", seen
    q = {k: v[0] for k, v in parse_qs(urlsplit(seen[0]).query).items()}
    assert q["redirect_uri"].startswith("http://127.0.0.1:") and q["redirect_uri"].endswith("/callback")
    assert q["resource"] == url and q["code_challenge_method"] == "S256" and q["scope"] == "tools:read"
    assert "Signing in through" in listed.stderr and seen[0] in listed.stderr

    path = token_file(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = kept(home)[url]
    assert record["client"]["client_id"] == q["client_id"] and record["client"]["client_id"].startswith("mcp-")
    assert record["tokens"]["refresh_token"] and record["issuer"] == server

    # Later runs, in either era, use the kept tokens: no browser.
    called = cli("call", url, "whoami", "--oauth", "--era", "legacy", env=home)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["structuredContent"] == {
        "subject": "nina", "tenant": "initech", "client": q["client_id"], "scopes": ["tools:read"]}
    inspected = cli("inspect", url, "--oauth", env=home)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["serverInfo"]["name"] == "proxied"
    assert len(browsed(home)) == 2

    # Without --oauth the kept tokens are not used: one line with the fix.
    bare = cli("list", url, env=home)
    assert bare.returncode == 2
    assert bare.stderr == f"mcpcore list: {url} wants credentials: sign in with --oauth, or pass --token TOKEN\n"

    # logout revokes the grant at the server and forgets it here; the next --oauth signs in again.
    mark = len(server_log(server))
    out = cli("logout", url, env=home)
    assert out.returncode == 0 and out.stderr == (f"signed out of {url}: the authorization server revoked the "
                                                  "grant\n")
    assert "authorization server: POST /oauth/revoke" in server_log(server)[mark:]
    assert url not in kept(home) and stat.S_IMODE(path.stat().st_mode) == 0o600
    again = cli("logout", url, env=home)
    assert again.returncode == 0 and again.stderr.startswith(f"no tokens kept for {url} (in ")
    assert cli("call", url, "whoami", "--oauth", env=home).returncode == 0
    assert len(browsed(home)) == 4
    every = cli("logout", "--all", env=home)
    assert every.returncode == 0
    assert every.stderr == f"signed out of {url}: the authorization server revoked the grant\n"
    assert kept(home) == {}


@pytest.mark.parametrize("browser", ["none", "unset"])
def test_without_a_browser_the_url_is_printed_and_followed(server: str, upstream: UpstreamProvider,
                                                           home: dict[str, str], browser: str) -> None:
    """``MCPCORE_OAUTH_BROWSER=none``, or unset on a machine where :mod:`webbrowser` finds no
    browser (no display, no ``BROWSER``, no ``TERM`` for a console one): the URL is printed, and
    the person (here the test) follows it."""
    upstream.set_user("omar", tid="initech")
    env = {**ENV, **home, "MCPCORE_OAUTH_BROWSER": "none"}
    if browser == "unset":
        env = {k: v for k, v in env.items()
               if k not in ("MCPCORE_OAUTH_BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "TERM")}
    first = "Open this URL in a browser to sign in:\n" if browser == "none" else "No browser here, visit:\n"
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore", "call", f"{server}/mcp", "whoami", "--oauth"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        assert proc.stderr.readline() == first
        url = proc.stderr.readline().strip()
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        browser = Browser(redirect)
        try:
            landing = browser.walk(url)
            landing = browser.decide(landing.page) if not landing.query else landing
        finally:
            browser.close()
        page = httpx.get(f"{redirect}?{urlencode(landing.query)}", timeout=20)
        assert page.status_code == 200 and "Signed in" in page.text
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert json.loads(out)["structuredContent"]["subject"] == "omar"


def test_a_wrong_state_is_refused(server: str, upstream: UpstreamProvider, home: dict[str, str]) -> None:
    upstream.set_user("pia", tid="initech")
    env = {**home, "MCPCORE_OAUTH_BROWSER": HOOK + " --wrong-state"}
    mark = len(server_log(server))
    out = cli("list", f"{server}/mcp", "--oauth", env=env)
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == (
        f"mcpcore list: signing in to {server}/mcp failed: the sign-in came back with a state this client did not "
        "send (a stale or forged redirect); nothing was exchanged: sign in again")
    assert browsed(env)[1] == "400 Sign-in refused"
    assert "POST /oauth/token" not in server_log(server)[mark:]
    assert "tokens" not in kept(env)[f"{server}/mcp"]


def test_a_client_metadata_document(server: str, upstream: UpstreamProvider, docs: DocServer,
                                    home: dict[str, str]) -> None:
    doc = docs.json("/mcpcore-cli.json", {"client_id": f"{docs.base}/mcpcore-cli.json", "client_name": "mcpcore CLI",
                                          "redirect_uris": ["http://127.0.0.1/callback"],
                                          "token_endpoint_auth_method": "none",
                                          "grant_types": ["authorization_code", "refresh_token"],
                                          "response_types": ["code"]})
    upstream.set_user("quin", tid="initech")
    out = cli("call", f"{server}/mcp", "whoami", "--oauth", "--oauth-client", doc, env=home)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"]["client"] == doc
    assert kept(home)[f"{server}/mcp"]["client"]["client_id"] == doc


def test_a_configured_client_id(server: str, upstream: UpstreamProvider, home: dict[str, str]) -> None:
    client_id = register(server, "http://127.0.0.1/callback", client_name="team CLI")["client_id"]
    upstream.set_user("rae", tid="initech")
    out = cli("call", f"{server}/mcp", "whoami", "--oauth", "--oauth-client", client_id, env=home)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"]["client"] == client_id
    assert f"client_id={client_id}&" in browsed(home)[0]


def test_mistakes_are_one_line_with_the_fix(server: str, home: dict[str, str]) -> None:
    env = {**home, "MCPCORE_OAUTH_BROWSER": "none"}
    started = time.monotonic()
    out = cli("list", f"{server}/mcp", "--oauth", "--oauth-timeout", "1", env=env)
    assert out.returncode == 2 and time.monotonic() - started < 30
    assert out.stderr.splitlines()[-1] == (f"mcpcore list: signing in to {server}/mcp failed: nobody signed in "
                                           "within 1 s: run it again and finish the sign-in in the browser")
    missing = cli("list", f"{server}/mcp", "--oauth", "--oauth-timeout", "1",
                  env={**home, "MCPCORE_OAUTH_BROWSER": "/nonexistent/browser"})
    lines = missing.stderr.splitlines()
    assert missing.returncode == 2 and lines[0].startswith("Cannot run MCPCORE_OAUTH_BROWSER='/nonexistent/browser' (")
    assert lines[0].endswith("); open this URL in a browser to sign in:") and lines[1].startswith(f"  {server}/oauth/")
    assert lines[-1].endswith("failed: nobody signed in within 1 s: run it again and finish the sign-in in the browser")
    for args, line in [
        (("list", "examples.everything:app", "--oauth"), "mcpcore list: --oauth signs in to a URL: an app run in "
         "this process or over stdio has no address a browser comes back to; serve it (`mcpcore run module:app`) "
         "and pass its URL"),
        (("list", f"{server}/mcp", "--oauth", "--token", "t"), "mcpcore list: give --oauth or --token, not both"),
        (("list", f"{server}/mcp", "--oauth-client", "x"), "mcpcore list: --oauth-client goes with --oauth"),
        (("logout",), "mcpcore logout: name the server (mcpcore logout URL) or give --all"),
    ]:
        out = cli(*args, env=env)
        assert out.returncode == 2 and out.stderr == line + "\n", (args, out.stderr)
