"""check_scopes: the framework form (per-definition ``auth=[...]``) and the handler form ``check_scopes(ctx, ...)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mcpcore.auth import check_scopes, has_scopes
from mcpcore.context import AuthInfo, Inbound
from mcpcore.errors import McpError
from mcpcore.testing import create_mock_context

WRITER = AuthInfo(client_id="c", scopes=("files:read", "files:write"), subject="u", tenant_id="t")
READER = AuthInfo(client_id="c", scopes=("files:read",), subject="u", tenant_id="t")


def code_of(fn: Any) -> McpError:
    with pytest.raises(McpError) as ei:
        fn()
    return ei.value


@pytest.mark.parametrize("mode", ["jwt", "oauth"])
def test_framework_form(mode: str) -> None:
    check_scopes(WRITER, ["files:write", "files:read"], auth_mode=mode, disabled=False)
    check_scopes(None, [], auth_mode=mode)  # nothing declared: no identity needed here
    e = code_of(lambda: check_scopes(READER, ["files:write"], auth_mode=mode, disabled=False))
    assert (e.code, e.message, e.data) == (-32005, "Insufficient permissions.", None)
    assert "files" not in str(e.to_wire("r1"))
    e = code_of(lambda: check_scopes(None, ["files:read"], auth_mode=mode, disabled=False))
    assert (e.code, e.message) == (-32006, "Authentication required.")


def test_framework_form_no_ops() -> None:
    check_scopes(None, ["files:write"], auth_mode="none", disabled=False)
    check_scopes(READER, ["files:write"], auth_mode="none")
    check_scopes(READER, ["files:write"], auth_mode="oauth", disabled=True)
    check_scopes(None, ["files:write"], auth_mode="oauth", disabled=True)


def test_misuse_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        check_scopes(WRITER, "files:write", auth_mode="jwt")
    with pytest.raises(TypeError):
        check_scopes(WRITER, ["files:write"])  # type: ignore[call-overload]


def test_exact_matching() -> None:
    assert has_scopes(["a", "b"], ["a"])
    assert not has_scopes(["files:*"], ["files:write"])
    assert not has_scopes(["Files:Write"], ["files:write"])
    assert has_scopes([], [])


def test_handler_form_with_mock_context() -> None:
    # A hand-built context carries no mode: an identity is checked, no identity means auth off.
    check_scopes(create_mock_context(auth=WRITER), ["files:write"])
    e = code_of(lambda: check_scopes(create_mock_context(auth=READER), ["files:write"]))
    assert (e.code, e.message) == (-32005, "Insufficient permissions.")
    check_scopes(create_mock_context(), ["files:write"])
    # Explicit arguments win.
    e = code_of(lambda: check_scopes(create_mock_context(), ["files:write"], auth_mode="oauth"))
    assert e.code == -32006
    check_scopes(create_mock_context(auth=READER), ["files:write"], disabled=True)


@dataclass
class Services:
    auth_mode: str
    scope_checks_disabled: bool = False


def test_handler_form_reads_the_mode_from_services() -> None:
    on = Inbound(services=Services("oauth"))  # type: ignore[arg-type]
    e = code_of(lambda: check_scopes(on, ["files:read"]))
    assert e.code == -32006
    on.auth = READER
    check_scopes(on, ["files:read"])
    assert code_of(lambda: check_scopes(on, ["files:write"])).code == -32005
    off = Inbound(services=Services("oauth", scope_checks_disabled=True))  # type: ignore[arg-type]
    check_scopes(off, ["files:write"])
    none = Inbound(services=Services("none"))  # type: ignore[arg-type]
    check_scopes(none, ["files:write"])
