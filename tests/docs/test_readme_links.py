"""README.md is also the package index's page, where relative links and images break: every
link and image is absolute, those into this repository name files that exist, and they share one
base, the ``Repository`` URL of pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from benchmarks.harness.readme import PUBLISHED, RAW

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
HTML = re.compile(r"<(?:img|a|source)\b[^>]*?\b(?:src|href|srcset)=[\"']([^\"']+)[\"']", re.I)


def targets(text: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    return LINK.findall(prose) + REFERENCE.findall(prose) + HTML.findall(prose)


def test_every_link_and_image_is_absolute() -> None:
    found = targets(README)
    assert len(found) > 20
    relative = [t for t in found if not re.match(r"(https?:|mailto:)", t)]
    assert not relative, f"README.md has relative links or images (they break on the package index): {relative}"


def test_links_into_the_repository_name_files_that_exist() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Repository"] == PUBLISHED
    assert PUBLISHED.replace("github.com", "raw.githubusercontent.com") + "/main" == RAW
    missing = []
    for target in targets(README):
        path = None
        if target.startswith(PUBLISHED + "/blob/main/"):
            path = target[len(PUBLISHED + "/blob/main/"):].split("#", 1)[0]
        elif target.startswith(RAW + "/"):
            path = target[len(RAW) + 1:]
        if path is not None and not (ROOT / path).exists():
            missing.append(target)
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_checker_sees_every_kind_of_relative_link() -> None:
    text = ("[a](docs/a.md) ![b](img.png) [c](#anchor) <img src=\"x.png\">\n[d]: ./ref.md\n"
            "```bash\n[not](a-link)\n```\n[e](https://example.com)")
    assert targets(text) == ["docs/a.md", "img.png", "#anchor", "https://example.com", "./ref.md", "x.png"]
