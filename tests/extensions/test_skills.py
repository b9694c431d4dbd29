"""Serving a folder of Agent Skills (SEP-2640): entries, digests, reads, directories, rules."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from mcpcore import ConfigurationError, McpApp, McpError, Settings
from mcpcore.extensions import SKILLS
from mcpcore.extensions.skills import Skills
from mcpcore.testing import McpTestClient

from ..connect import Connect

pytestmark = pytest.mark.anyio


def _skill(root: Path, path: str, name: str | None = None, extra: str = "", files: dict[str, bytes] | None = None
           ) -> Path:
    folder = root / path
    folder.mkdir(parents=True, exist_ok=True)
    name = name or folder.name
    (folder / "SKILL.md").write_bytes(
        f"---\nname: {name}\ndescription: Does {name} things well.\n{extra}---\n\n# {name}\n".encode())
    for rel, data in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def _app(root: Path | Skills, **settings: Any) -> McpApp:
    return McpApp("skills", "1.0", skills=root, settings=Settings.from_env({}, **settings))


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    _skill(tmp_path, "pdf-processing", extra="license: MIT\nflag: yes\nwhen: 2024-05-01\n",
           files={"references/FORMS.md": b"# Forms\n", "scripts/extract.py": b"print('x')\n",
                  "assets/logo.bin": b"\x89PNG\x00\xff", ".hidden": b"secret", ".git/config": b"x"})
    _skill(tmp_path, "acme/billing/refunds")
    return tmp_path


async def test_declared_listed_and_fetched(tree: Path, connect: Connect) -> None:
    async with connect(_app(tree)) as c:
        caps = (c.init_result or {}).get("capabilities") if c.way != "http-2026" else \
            (await c.request("server/discover"))["capabilities"]
        assert caps["extensions"][SKILLS] == {"directoryRead": True} and "resources" in caps
        listed = await c.request("skills/list", {})
        uris = [s["uri"] for s in listed["skills"]]
        assert uris == ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"]
        pdf = listed["skills"][1]
        # frontmatter verbatim, read as YAML 1.2: `yes` and dates stay strings
        assert pdf["frontmatter"] == {"name": "pdf-processing", "description": "Does pdf-processing things well.",
                                      "license": "MIT", "flag": "yes", "when": "2024-05-01"}
        by_uri = {r["uri"]: r for r in pdf["resources"]}
        assert list(by_uri) == ["skill://pdf-processing/SKILL.md", "skill://pdf-processing/assets/logo.bin",
                                "skill://pdf-processing/references/FORMS.md", "skill://pdf-processing/scripts/extract.py"]
        for uri, entry in by_uri.items():
            read = (await c.request("resources/read", {"uri": uri}))["contents"][0]
            data = read["text"].encode() if "text" in read else base64.b64decode(read["blob"])
            assert entry == {"uri": uri, "digest": _digest(data), "size": len(data)}
        assert (tree / "pdf-processing/SKILL.md").read_bytes() == \
            (await c.request("resources/read", {"uri": pdf["uri"]}))["contents"][0]["text"].encode()
        got = await c.request("skills/get", {"uri": pdf["uri"]})
        assert got["skill"] == pdf and "nextCursor" not in got
        if c.way == "http-2026":
            assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private" and got["resultType"] == "complete"
        with pytest.raises(McpError) as e:
            await c.request("skills/get", {"uri": "skill://nope/SKILL.md"})
        assert e.value.code == -32602
        with pytest.raises(McpError) as e:
            await c.request("resources/read", {"uri": "skill://pdf-processing/.hidden"})
        resources = (await c.request("resources/list"))["resources"]
        assert {r["uri"]: (r["name"], r["mimeType"]) for r in resources} == {
            "skill://pdf-processing/SKILL.md": ("pdf-processing", "text/markdown"),
            "skill://acme/billing/refunds/SKILL.md": ("refunds", "text/markdown")}
        assert resources[0]["description"].startswith("Does ")


async def test_directory_read(tree: Path) -> None:
    async with McpTestClient(_app(tree), era="modern") as c:
        root = await c.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        assert [(r["name"], r["mimeType"]) for r in root["resources"]] == [
            ("SKILL.md", "text/markdown"), ("assets", "inode/directory"), ("references", "inode/directory"),
            ("scripts", "inode/directory")]
        sub = await c.request("resources/directory/read", {"uri": "skill://pdf-processing/scripts"})
        assert sub["resources"] == [{"uri": "skill://pdf-processing/scripts/extract.py", "name": "extract.py",
                                     "mimeType": "text/x-python", "size": 11}]
        prefix = await c.request("resources/directory/read", {"uri": "skill://acme"})
        assert prefix["resources"] == [{"uri": "skill://acme/billing", "name": "billing",
                                        "mimeType": "inode/directory"}]
        for bad in ("skill://pdf-processing/SKILL.md", "skill://missing", 7):
            with pytest.raises(McpError) as e:
                await c.request("resources/directory/read", {"uri": bad})
            assert e.value.code == -32602


async def test_directory_read_can_be_left_out(tree: Path) -> None:
    async with McpTestClient(_app(Skills(tree, directory_read=False)), era="modern") as c:
        assert (await c.request("server/discover"))["capabilities"]["extensions"][SKILLS] == {}
        with pytest.raises(McpError) as e:
            await c.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        assert e.value.code == -32601


async def test_pagination_keeps_entries_whole(tmp_path: Path) -> None:
    for n in ("one", "two", "three"):
        _skill(tmp_path, n, files={"a.md": b"a", "b.md": b"b"})
    async with McpTestClient(_app(tmp_path, list_page_size=2)) as c:
        first = await c.request("skills/list", {})
        second = await c.request("skills/list", {"cursor": first["nextCursor"]})
        assert len(first["skills"]) == 2 and len(second["skills"]) == 1 and "nextCursor" not in second
        assert all(len(s["resources"]) == 3 for s in first["skills"] + second["skills"])
        with pytest.raises(McpError) as e:
            await c.request("skills/list", {"cursor": "bogus!"})
        assert e.value.code == -32602
        d1 = await c.request("resources/directory/read", {"uri": "skill://one"})
        d2 = await c.request("resources/directory/read", {"uri": "skill://one", "cursor": d1["nextCursor"]})
        assert [r["name"] for r in d1["resources"] + d2["resources"]] == ["SKILL.md", "a.md", "b.md"]


async def test_digests_are_computed_once_and_match_what_is_served(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "stable", files={"notes.md": b"first\n"})
    app = _app(tmp_path)
    (folder / "notes.md").write_bytes(b"changed on disk\n")
    async with McpTestClient(app) as c:
        entry = (await c.request("skills/list"))["skills"][0]
        read = (await c.request("resources/read", {"uri": "skill://stable/notes.md"}))["contents"][0]
        assert read["text"] == "first\n"
        assert {"uri": "skill://stable/notes.md", "digest": _digest(b"first\n"), "size": 6} in entry["resources"]


async def test_prefix_and_single_skill_folder(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "solo")
    async with McpTestClient(_app(Skills(folder, prefix="team/tools"))) as c:
        assert [s["uri"] for s in (await c.request("skills/list"))["skills"]] == ["skill://team/tools/solo/SKILL.md"]


@pytest.mark.parametrize(("path", "name", "extra", "message"), [
    ("good", "other", "", "must equal its folder name"),
    ("Bad_Name", None, "", "lowercase"),
    ("dash-", None, "", "lowercase"),
    ("meta", None, "metadata:\n  io.modelcontextprotocol/x: y\n", "reserved"),
    ("meta2", None, "metadata: 3\n", "mapping"),
])
def test_frontmatter_rules(tmp_path: Path, path: str, name: str | None, extra: str, message: str) -> None:
    _skill(tmp_path, path, name=name, extra=extra)
    with pytest.raises(ConfigurationError, match=message):
        Skills(tmp_path)


@pytest.mark.parametrize("text", ["# no frontmatter\n", "---\nname: x\n---\n", "---\nname: [unclosed\n---\n",
                                  "---\n- a list\n---\n"])
def test_skill_md_must_carry_name_and_description(tmp_path: Path, text: str) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "SKILL.md").write_text(text)
    with pytest.raises(ConfigurationError):
        Skills(tmp_path)


def test_limits_and_empty_folders(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"holds no SKILL\.md"):
        Skills(tmp_path)
    with pytest.raises(ConfigurationError, match="does not exist"):
        Skills(tmp_path / "missing")
    _skill(tmp_path, "big", files={f"f{i}.txt": b"x" for i in range(512)})
    with pytest.raises(ConfigurationError, match="at most 512 files"):
        Skills(tmp_path)


def test_links_out_of_the_folder_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "skills"
    folder = _skill(root, "linky")
    (folder / "leak.txt").symlink_to(outside)
    with pytest.raises(ConfigurationError, match="links outside"):
        Skills(root)


async def test_nested_skills_are_listed_flat_and_the_outer_manifest_is_complete(tmp_path: Path) -> None:
    _skill(tmp_path, "outer", files={"guide.md": b"g"})
    _skill(tmp_path, "outer/inner", files={"notes.md": b"n"})
    async with McpTestClient(_app(tmp_path)) as c:
        entries = {s["uri"]: s for s in (await c.request("skills/list"))["skills"]}
        assert list(entries) == ["skill://outer/SKILL.md", "skill://outer/inner/SKILL.md"]
        outer = [r["uri"] for r in entries["skill://outer/SKILL.md"]["resources"]]
        assert outer == ["skill://outer/SKILL.md", "skill://outer/guide.md", "skill://outer/inner/SKILL.md",
                         "skill://outer/inner/notes.md"]
        assert [r["uri"] for r in entries["skill://outer/inner/SKILL.md"]["resources"]] == [
            "skill://outer/inner/SKILL.md", "skill://outer/inner/notes.md"]
        listed = {r["uri"]: r["name"] for r in (await c.request("resources/list"))["resources"]}
        assert listed == {"skill://outer/SKILL.md": "outer", "skill://outer/inner/SKILL.md": "inner"}


async def test_links_to_hidden_files_are_not_served(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "linky", files={".env": b"TOKEN=secret", ".git/config": b"[core]", "real.md": b"# real"})
    (folder / "notes.md").symlink_to(folder / ".env")  # a visible name for a hidden file
    (folder / "config.txt").symlink_to(folder / ".git" / "config")
    (folder / "alias.md").symlink_to(folder / "real.md")  # a link to a visible file is served as before
    s = Skills(tmp_path)
    assert sorted(s.files) == ["skill://linky/SKILL.md", "skill://linky/alias.md", "skill://linky/real.md"]
    async with McpTestClient(_app(s)) as c:
        for uri in ("skill://linky/notes.md", "skill://linky/config.txt"):
            with pytest.raises(McpError):
                await c.request("resources/read", {"uri": uri})
        (entry,) = (await c.request("skills/list"))["skills"]
        assert "secret" not in str(entry) and len(entry["resources"]) == 3


def test_the_total_is_checked_from_sizes_before_any_file_is_read(tmp_path: Path) -> None:
    import tracemalloc

    _skill(tmp_path, "huge", files={f"part{i}.bin": b"\0" * (1024 * 1024) for i in range(20)})  # 20 MiB
    tracemalloc.start()
    try:
        with pytest.raises(ConfigurationError, match="at most 512 files and 16777216 bytes"):
            Skills(tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, peak  # reading the files first held all 20 MiB


def test_a_fifo_or_other_special_file_is_skipped_with_a_warning(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    import os
    import threading

    folder = _skill(tmp_path, "piped", files={"real.md": b"# real"})
    fifo = folder / "pipe.txt"
    os.mkfifo(fifo)
    (folder / "to-pipe.md").symlink_to(fifo)
    loaded: list[Skills] = []
    worker = threading.Thread(target=lambda: loaded.append(Skills(tmp_path)), daemon=True)
    with caplog.at_level("WARNING", logger="mcpcore.skills"):
        worker.start()
        worker.join(10)
        blocked = worker.is_alive()
        if blocked:  # unblock the reader stuck on the FIFO, so the thread ends
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(10)
    assert not blocked, "building the skills blocked on a FIFO"
    (s,) = loaded
    assert sorted(s.files) == ["skill://piped/SKILL.md", "skill://piped/real.md"]
    skipped = [r.getMessage() for r in caplog.records if "not a regular file" in r.getMessage()]
    assert len(skipped) == 2 and any("pipe.txt" in m for m in skipped) and any("to-pipe.md" in m for m in skipped)
