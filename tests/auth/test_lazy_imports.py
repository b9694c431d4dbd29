"""``import mcpcore`` (and an app with ``MCP_AUTH_MODE=none``) loads no JOSE, crypto or HTTP client
library; the auth names stay importable from ``mcpcore.auth`` and load them on first use."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("jwt", "cryptography", "httpx", "opentelemetry")


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "MCP_AUTH_MODE": "none"})
    return out.stdout.split()


def test_import_mcpcore_and_build_an_app_without_auth_loads_none_of_them() -> None:
    assert _loaded("import mcpcore\nfrom mcpcore import McpApp\nMcpApp('t', '1')") == []


def test_auth_names_load_on_first_use() -> None:
    assert _loaded("from mcpcore.auth import AuthError, check_scopes, create_authenticator") == []
    assert _loaded("from mcpcore.auth import JwtAuthenticator") == ["jwt", "cryptography"]
    assert set(_loaded("from mcpcore.auth import OAuthAuthenticator")) == {"jwt", "cryptography", "httpx"}
    assert "jwt" in _loaded("from mcpcore.auth import *")


def test_lazy_names_are_the_real_ones() -> None:
    import mcpcore.auth as auth
    from mcpcore.auth.jwt_auth import MIN_SECRET_LENGTH, JwtAuthenticator
    from mcpcore.auth.oauth import OAuthAuthenticator

    assert auth.JwtAuthenticator is JwtAuthenticator
    assert auth.OAuthAuthenticator is OAuthAuthenticator
    assert auth.MIN_SECRET_LENGTH == MIN_SECRET_LENGTH
    assert set(auth.__all__) <= set(dir(auth))
