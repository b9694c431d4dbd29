"""The documentation site (mkdocs + mkdocstrings) builds with --strict, its API reference covers
every public name, and a broken reference fails the build."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ["mcpcore", "mcpcore.auth", "mcpcore.middleware", "mcpcore.storage", "mcpcore.extensions",
          "mcpcore.client", "mcpcore.testing", "mcpcore.telemetry", "mcpcore.metrics", "mcpcore.openapi",
          "mcpcore.credentials", "mcpcore.compose"]


def mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mkdocs"
    if not exe.exists():
        pytest.fail("mkdocs is missing: make install (mkdocs and mkdocstrings[python] are in the dev extra)",
                    pytrace=False)
    return subprocess.run([str(exe), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
                          cwd=config.parent, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_site_builds_strictly_with_every_public_name(tmp_path: Path) -> None:
    proc = mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]
    for module in PUBLIC:
        page = tmp_path / "site" / "reference" / (module.removeprefix("mcpcore.") if module != "mcpcore" else
                                                 "mcpcore") / "index.html"
        html = page.read_text(encoding="utf-8")
        names = getattr(importlib.import_module(module), "__all__", [])
        missing = [n for n in names if not n.startswith("__")  # lazy names: documented from their module
                   and not re.search(rf'id="{re.escape(module)}(\.\w+)*\.{n}"', html)]
        assert not missing, f"{page.relative_to(tmp_path)} documents no {missing}"
    assert (tmp_path / "site" / "getting-started" / "index.html").exists()


@pytest.mark.slow
def test_a_reference_to_a_name_that_does_not_exist_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("bench"))
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["nav"] = [{"Home": "index.md"}, {"Broken": "reference/broken.md"}]
    config["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    config["exclude_docs"] = "tools/\nbench/\n"
    (tmp_path / "docs" / "reference" / "broken.md").write_text("# Broken\n\n::: mcpcore.NoSuchThing\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    proc = mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert "mcpcore.NoSuchThing" in proc.stderr
