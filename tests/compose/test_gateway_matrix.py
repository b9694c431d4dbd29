"""The real-client matrix (tests/test_client_matrix.py) against a gateway that mounts one child
and proxies two backends: the example server (``ex_``) and the official Python SDK server
(``py_``). Every case of the matrix runs on the example server's definitions through the proxy,
and must come out exactly as it does against the example server itself."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compose.test_proxy_peers import py_sdk  # noqa: F401 - the fixture
from tests.servers import run_server
from tests.test_client_matrix import (
    CASES,
    SCRIPT,
    Case,
    _inspector_row,
    _python_steps,
    expected,
    outcome,
)
from tests.tools import ensure_node

pytestmark = pytest.mark.slow


def _through(case: Case) -> Case:
    """``case`` as the gateway serves it: the example server's names under ``ex``."""
    step = dict(case.step)
    check = dict(case.check)
    if step["op"] == "list":
        check["names"] = ["ex_" + n for n in check["names"]] + ["local_local_echo", "py_echo"]
    elif step["op"] in ("call", "prompt"):
        step["name"] = "ex_" + step["name"]
    elif step["op"] == "read":
        step["uri"] = step["uri"].replace("test://", "test://ex/", 1)
    return dataclasses.replace(case, step=step, check=check)


GATEWAY_CASES = [_through(c) for c in CASES]


@pytest.fixture(scope="module")
def gateway_url(py_sdk: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    sandbox = tmp_path_factory.mktemp("sandbox")
    with run_server(env={"MCP_EXAMPLE_SANDBOX": str(sandbox)}) as example, \
            run_server("tests.compose.gateway_app:app", env={"PROXY_BACKENDS": f"ex={example},py={py_sdk}/mcp"}) as url:
        yield url


@pytest.mark.parametrize(("sdk", "era"), [("sdk1", "legacy"), ("sdk2", "legacy"), ("sdk2", "modern")])
def test_typescript(gateway_url: str, sdk: str, era: str) -> None:
    modules = ensure_node.ensure("client")
    plan = {"sdk": sdk, "era": era, "url": gateway_url, "steps": [c.step for c in GATEWAY_CASES]}
    proc = subprocess.run([str(ensure_node.node_bin() / "node"), str(SCRIPT)], input=json.dumps(plan),
                          env={**ensure_node.env(), "MCP_CLIENT_MODULES": str(modules)},
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    row = {c.name: outcome(c, seen) for c, seen in zip(GATEWAY_CASES, out["steps"], strict=True)}
    assert row == expected(era)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_python(gateway_url: str, era: str) -> None:
    steps = await _python_steps(gateway_url, era, GATEWAY_CASES)
    row = {c.name: outcome(c, seen) for c, seen in zip(GATEWAY_CASES, steps, strict=True)}
    assert row == expected(era)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector(gateway_url: str, era: str, tmp_path: Path) -> None:
    assert _inspector_row(GATEWAY_CASES, era, "http", gateway_url, tmp_path) == expected(era)
