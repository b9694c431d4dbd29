"""The consent page as a person sees it: headless Chromium (Debian's, driven by playwright-core,
JavaScript off, a phone's viewport) follows the sign-in at the real oidc-provider to the consent
page, a screenshot is kept (.cache/artifacts/consent-page.png, printed), Allow is pressed and the
code the client receives is redeemed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest

from tests.auth.upstream import UpstreamProvider, authorize_url, pkce, register, run_proxied
from tests.tools import ensure_node

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / ".cache" / "artifacts"
SCRIPT = Path(__file__).resolve().parents[1] / "js" / "consent_browser.mjs"


@pytest.fixture
def client_redirect() -> Iterator[str]:
    """A native client's loopback listener for the authorization response."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<p>signed in; you may close this window</p>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/callback"
    httpd.shutdown()
    httpd.server_close()


def test_the_consent_page_in_chromium(upstream: UpstreamProvider, client_redirect: str) -> None:
    redirect = client_redirect
    if not Path("/usr/bin/chromium").exists():
        raise AssertionError("chromium is missing: run .venv/bin/python -m tests.tools.ensure_system (Debian chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "consent-page.png"
    shot.unlink(missing_ok=True)
    env = {**ensure_node.env(), "BROWSER_MODULES": str(ensure_node.ensure("browser"))}
    with run_proxied(upstream) as base:
        client_id = register(base, redirect)["client_id"]
        upstream.set_user("kim", name="Kim Example")
        verifier, challenge = pkce()
        url = authorize_url(base, client_id, redirect, challenge)
        proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(SCRIPT), url, redirect, str(shot)], env=env,
                              capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
        out = orjson.loads(proc.stdout.splitlines()[-1])
        print(f"consent page screenshot: {shot}")
        assert out["heading"] == "Allow Test Desk to use proxied?"
        assert out["scopes"] == ["tools:read"]
        assert out["viewportMeta"] == "width=device-width, initial-scale=1"
        assert shot.stat().st_size > 10_000
        q = {k: v[0] for k, v in parse_qs(urlsplit(out["landed"]).query).items()}
        assert q["state"] == "client-state-1" and q["iss"] == base
        r = httpx.post(f"{base}/oauth/token", data={"grant_type": "authorization_code", "code": q["code"],
                                                    "redirect_uri": redirect, "client_id": client_id,
                                                    "code_verifier": verifier})
        assert r.status_code == 200, r.text
