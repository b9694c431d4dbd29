"""The authorization server on two instances sharing Redis (standalone, Cluster, Sentinel) behind
the scale-out tests' round-robin proxy: every request of the flow goes to the next instance, so
the authorization starts on one and its callback, consent and token requests alternate, each
instance reading what the other stored."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.auth.upstream import Browser, UpstreamProvider, authorize_url, call_tool, pkce, proxy_env
from tests.scale.harness import cluster, proxy
from tests.servers import free_port, server_log

pytestmark = pytest.mark.slow
REDIRECT = "http://127.0.0.1:9/callback"


@pytest.mark.parametrize("topology", ["standalone", "cluster", "sentinel"])
def test_each_step_on_another_instance(tmp_path: Path, upstream: UpstreamProvider, topology: str) -> None:
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    env = proxy_env(upstream, public, MCP_LOG_LEVEL="info")
    with cluster(tmp_path, "tests.apps.proxied:app", n=2, extra_env=env, topology=topology) as c, \
            proxy(c.urls, port=port):
        r = httpx.post(f"{public}/oauth/register", json={"redirect_uris": [REDIRECT], "client_name": "Desk"})
        assert r.status_code == 201, r.text
        client_id = r.json()["client_id"]
        upstream.set_user("frank", tid="globex")
        verifier, challenge = pkce()
        browser = Browser(REDIRECT)
        try:
            consent = browser.walk(authorize_url(public, client_id, REDIRECT, challenge))
            assert consent.status == 200 and "Allow Desk" in consent.page, consent.page[:300]
            landing = browser.decide(consent.page)
        finally:
            browser.close()
        assert landing.query.get("code"), landing
        ours = [u for u in browser.visited if u.startswith(public)]
        assert [u.split("?")[0][len(public):] for u in ours] == ["/oauth/authorize", "/oauth/callback",
                                                                 "/oauth/consent"]
        r = httpx.post(f"{public}/oauth/token", data={"grant_type": "authorization_code", "client_id": client_id,
                                                      "code": landing.query["code"], "redirect_uri": REDIRECT,
                                                      "code_verifier": verifier})
        assert r.status_code == 200, r.text
        tokens = r.json()
        for _ in range(2):  # the token verifies on both instances, the upstream token opens on both
            r = call_tool(public, tokens["access_token"], "provider_profile")
            assert r.json()["result"]["structuredContent"] == {"status": 200, "sub": "frank"}, r.text
        r = httpx.post(f"{public}/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                      "refresh_token": tokens["refresh_token"]})
        assert r.status_code == 200, r.text
        reuse = httpx.post(f"{public}/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                          "refresh_token": tokens["refresh_token"]})
        assert reuse.json()["error"] == "invalid_grant"
        logs = [server_log(u) for u in c.urls]

        def served_by(step: str) -> set[int]:
            return {i for i, log in enumerate(logs) if f"authorization server: {step}" in log}

        assert served_by("GET /oauth/authorize") and served_by("GET /oauth/callback")
        assert served_by("GET /oauth/authorize") != served_by("GET /oauth/callback")
        assert served_by("POST /oauth/token") == {0, 1}
        if topology == "standalone":  # every record the flow left has an expiry
            import redis

            r = redis.Redis.from_url(c.redis_url)
            try:
                keys = list(r.scan_iter("mcpcore:as:*"))
                kinds = {k.decode().split(":")[2] for k in keys}
                assert {"client", "refresh", "consent", "code"} <= kinds, kinds
                assert "family" not in kinds, "the reused refresh token revoked its grant"
                assert all(r.pttl(k) > 0 for k in keys)
            finally:
                r.close()
