"""Agent Skills over MCP (SEP-2640, ``io.modelcontextprotocol/skills``): serve a folder of skills.

Every folder holding a ``SKILL.md`` is a skill; each of its files is a resource
``skill://<skill-path>/<file-path>``, read with ``resources/read``. The extension adds
``skills/list`` (paginated entries: verbatim frontmatter plus a complete manifest with SHA-256
digests and sizes), ``skills/get`` (one entry by URI) and ``resources/directory/read`` (the
direct children of a skill directory, subfolders as ``inode/directory``).

Files are read, checked and hashed once, when the app is built; what is served afterwards is
exactly the bytes that were hashed, so a digest never disagrees with its file::

    app = McpApp("docs", "1.0", skills="skills/")            # skills/<name>/SKILL.md, ...
    app = McpApp("docs", "1.0", skills=Skills("skills/", prefix="acme"))  # skill://acme/<name>/...
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import _json
from ..definitions.resources import CacheHint, ResourceDefinition
from ..definitions.schema import args_plan
from ..definitions.uritemplate import UriTemplate
from ..errors import ConfigurationError, JsonRpcErrorCode, McpError, quoted
from ..protocol.extensions import SKILLS
from ..protocol.pagination import page
from .frontmatter import FrontmatterError, parse_frontmatter
from .skill_files import list_files, read_within

if TYPE_CHECKING:
    from ..context import Inbound
    from ..server.core import ServerCore
    from .seam import Seam

__all__ = ["MAX_FILES", "MAX_TOTAL_BYTES", "Skill", "SkillFile", "Skills", "plug_skills"]

SKILL_FILE = "SKILL.md"
DIRECTORY_MIME = "inode/directory"
MAX_FILES = 512
"""Files per skill (``SKILL.md`` included) every host must accept."""
MAX_TOTAL_BYTES = 16 * 1024 * 1024
"""Total bytes per skill every host must accept."""
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_RESERVED_META = "io.modelcontextprotocol/"
_TEXT_MIME = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain", ".py": "text/x-python",
              ".sh": "text/x-shellscript", ".json": "application/json", ".yaml": "application/yaml",
              ".yml": "application/yaml", ".toml": "application/toml", ".csv": "text/csv", ".html": "text/html",
              ".js": "text/javascript", ".ts": "text/x-typescript"}


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill, as served: its bytes, digest and ``resources/read`` content item."""

    uri: str
    name: str
    mime_type: str
    data: bytes
    digest: str
    content: dict[str, Any]

    def manifest(self) -> dict[str, Any]:
        """The ``{uri, digest, size}`` triple of a skill entry's ``resources``."""
        return {"uri": self.uri, "digest": self.digest, "size": len(self.data)}


@dataclass(slots=True)
class Skill:
    """A skill: the URI of its ``SKILL.md``, its frontmatter and every file under its folder."""

    uri: str
    root: str
    frontmatter: dict[str, Any]
    files: list[SkillFile] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    def entry(self) -> dict[str, Any]:
        """The ``Skill`` entry of ``skills/list`` and ``skills/get``."""
        return {"uri": self.uri, "frontmatter": self.frontmatter, "resources": [f.manifest() for f in self.files]}


def _segment(name: str) -> str:
    return quote(name, safe="-._~!$&'()*+,;=:@")


def _mime(path: Path, data: bytes) -> tuple[str, str | None]:
    """``(mimeType, text)``: text is the UTF-8 decoding when the file is text, else ``None``."""
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if path.name == SKILL_FILE:
        return "text/markdown", text
    mime = _TEXT_MIME.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
    if mime is None:
        mime = "text/plain" if text is not None and "\x00" not in text else "application/octet-stream"
    return mime, text


def _skill_file(uri: str, name: str, path: Path, data: bytes) -> SkillFile:
    mime, text = _mime(path, data)
    content: dict[str, Any] = {"uri": uri, "mimeType": mime}
    if text is not None:
        content["text"] = text
    else:
        content["blob"] = base64.b64encode(data).decode("ascii")
    return SkillFile(uri, name, mime, data, "sha256:" + hashlib.sha256(data).hexdigest(), content)


def _check_frontmatter(where: str, fm: dict[str, Any], folder: str) -> None:
    name = fm.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 64:
        raise ConfigurationError(f"{where}: frontmatter 'name' must be 1-64 lowercase letters, digits and single "
                                 f"hyphens (no leading or trailing hyphen), got {name!r}")
    if name != folder:
        raise ConfigurationError(f"{where}: frontmatter name {name!r} must equal its folder name {folder!r}")
    desc = fm.get("description")
    if not isinstance(desc, str) or not desc.strip() or len(desc) > 1024:
        raise ConfigurationError(f"{where}: frontmatter 'description' must be a non-empty string of at most 1024 "
                                 "characters")
    meta = fm.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict):
            raise ConfigurationError(f"{where}: frontmatter 'metadata' must be a mapping")
        reserved = [k for k in meta if str(k).startswith(_RESERVED_META)]
        if reserved:
            raise ConfigurationError(f"{where}: metadata keys under {_RESERVED_META!r} are reserved for MCP "
                                     f"extensions: {', '.join(map(str, reserved))}")
    try:
        if _json.loads(_json.dumps(fm)) != fm:
            raise ValueError("changes in a JSON round trip")
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{where}: frontmatter must be plain JSON values ({exc})") from None


class Skills:
    """A folder of Agent Skills, loaded, validated and hashed once.

    Args:
        root: a folder of skills (each sub-folder with a ``SKILL.md``, nested to any depth), or a
            single skill's folder.
        prefix: organizational path before each skill (``"acme/billing"`` serves
            ``skill://acme/billing/<name>/SKILL.md``).
        directory_read: serve ``resources/directory/read`` (declared as ``directoryRead``).
        cache_hint: ``ttlMs``/``cacheScope`` for 2026-07-28 ``skills/list``, ``skills/get`` and
            skill ``resources/read`` results (default: not cacheable, private).

    Hidden files and folders (a leading ``.``), links to them, and anything but regular files
    (skipped with a warning) are not part of a skill. A skill breaking the Agent Skills naming
    rules, or one over :data:`MAX_FILES` files or :data:`MAX_TOTAL_BYTES` (checked from the
    files' sizes before any is read), is refused with :class:`ConfigurationError`.
    """

    def __init__(self, root: str | os.PathLike[str], *, prefix: str | None = None, directory_read: bool = True,
                 cache_hint: CacheHint | None = None) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ConfigurationError(f"skills folder {str(root)!r} does not exist")
        self.prefix = [s for s in (prefix or "").split("/") if s]
        if any(s in (".", "..") for s in self.prefix):
            raise ConfigurationError(f"skills prefix {prefix!r} must not contain '.' or '..' segments")
        self.directory_read = directory_read
        self.cache_hint = cache_hint or CacheHint(0, "private")
        self.skills: list[Skill] = []
        self.files: dict[str, SkillFile] = {}
        self.directories: dict[str, list[dict[str, Any]]] = {}
        self._load()
        self.by_uri = {s.uri: s for s in self.skills}
        self.entries = [s.entry() for s in self.skills]

    def plug_into(self, seam: Seam) -> None:
        """Serve these skills through ``seam`` (:func:`plug_skills`); ``McpApp(skills=...)`` does."""
        plug_skills(self, seam)

    def settings(self) -> dict[str, Any]:
        """The extension's settings object under ``capabilities.extensions``."""
        return {"directoryRead": True} if self.directory_read else {}

    # -- loading --------------------------------------------------------------------------------

    def _uri(self, parts: list[str]) -> str:
        return "skill://" + "/".join(_segment(p) for p in [*self.prefix, *parts])

    def _load(self) -> None:
        if (self.root / SKILL_FILE).is_file():
            folders = [(self.root, [self.root.name])]
        else:
            folders = [(Path(d), list(Path(d).relative_to(self.root).parts)) for d, dn, fn in os.walk(self.root)
                       if SKILL_FILE in fn and not any(p.startswith(".") for p in Path(d).relative_to(self.root).parts)]
            folders.sort(key=lambda f: f[1])
        if not folders:
            raise ConfigurationError(f"skills folder {str(self.root)!r} holds no {SKILL_FILE}")
        for folder, parts in folders:
            self._load_skill(folder, parts)

    def _load_skill(self, folder: Path, parts: list[str]) -> None:
        where = str(folder / SKILL_FILE)
        skill_root = self._uri(parts)
        listed = list_files(self.root, folder)
        total = sum(f.size for f in listed)
        too_big = ConfigurationError(f"{folder}: {len(listed)} files, {total} bytes; a skill may hold at most "
                                     f"{MAX_FILES} files and {MAX_TOTAL_BYTES} bytes")
        if len(listed) > MAX_FILES or total > MAX_TOTAL_BYTES:
            raise too_big
        files: list[SkillFile] = []
        left = MAX_TOTAL_BYTES
        for found in listed:
            rel = list(found.path.relative_to(folder).parts)
            uri = skill_root + "/" + "/".join(_segment(p) for p in rel)
            f = self.files.get(uri)  # a nested skill's file, read for the outer skill already
            data = f.data if f is not None else read_within(found, left)
            if data is None or len(data) > left:
                raise too_big  # it grew since it was listed
            left -= len(data)
            if f is None:
                f = self.files[uri] = _skill_file(uri, rel[-1], found.path, data)
            files.append(f)
            self._index(skill_root, rel, f)
        if skill_root + "/" + SKILL_FILE not in self.files:
            raise ConfigurationError(f"{where}: not a regular file in the skills folder")
        md = self.files[skill_root + "/" + SKILL_FILE]
        if "text" not in md.content:
            raise ConfigurationError(f"{where}: not UTF-8 text")
        try:
            fm = parse_frontmatter(md.content["text"])
        except FrontmatterError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
        _check_frontmatter(where, fm, parts[-1])
        files.sort(key=lambda f: (f.uri != md.uri, f.uri))
        self.skills.append(Skill(md.uri, skill_root, fm, files))

    def _index(self, skill_root: str, rel: list[str], f: SkillFile) -> None:
        """Record ``f`` under its folder, and every folder on the way under its parent."""
        full = skill_root[len("skill://"):].split("/") + [_segment(p) for p in rel]
        for depth in range(1, len(full)):
            parent = "skill://" + "/".join(full[:depth])
            children = self.directories.setdefault(parent, [])
            if depth == len(full) - 1:
                entry = {"uri": f.uri, "name": f.name, "mimeType": f.mime_type, "size": len(f.data)}
            else:
                child = "skill://" + "/".join(full[:depth + 1])
                entry = {"uri": child, "name": full[depth], "mimeType": DIRECTORY_MIME}
            if not any(c["uri"] == entry["uri"] for c in children):
                children.append(entry)
                children.sort(key=lambda c: c["uri"])

    # -- serving --------------------------------------------------------------------------------

    def definitions(self) -> list[ResourceDefinition]:
        """A fixed resource per file: each ``SKILL.md`` listed (named and described from its
        frontmatter), the other files readable but left out of ``resources/list``."""
        plan = args_plan(_no_args, "skills", model_name="skill_file_params", localns={})
        out: list[ResourceDefinition] = []
        skill_md = {s.uri: s for s in self.skills}
        owner: dict[str, str] = {}
        for s in sorted(self.skills, key=lambda s: -len(s.root)):  # the innermost skill names a file
            for f in s.files:
                owner.setdefault(f.uri, s.name)
        for f in self.files.values():
            skill = skill_md.get(f.uri)
            fn = _reader(f.content)
            out.append(ResourceDefinition(
                uri=f.uri, template=UriTemplate(f.uri), name=skill.name if skill else f.name, fn=fn, args=plan,
                call=_caller(fn), mime_type=f.mime_type, size=len(f.data),
                description=str(skill.frontmatter["description"]) if skill else
                f"A supporting file of skill {owner[f.uri]}.", cache_hint=self.cache_hint, listed=skill is not None))
        return out

    def get(self, uri: Any) -> Skill:
        """The skill whose ``SKILL.md`` is at ``uri``; ``-32602`` when none is served there."""
        skill = self.by_uri.get(uri) if type(uri) is str else None
        if skill is None:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"No skill is served at {quoted(uri)}", _uri_data(uri))
        return skill

    def children(self, uri: Any) -> list[dict[str, Any]]:
        """The direct children of directory ``uri``; ``-32602`` when it is not one."""
        found = self.directories.get(uri) if type(uri) is str else None
        if found is None:
            raise McpError(JsonRpcErrorCode.InvalidParams, f"{quoted(uri)} is not a directory resource", _uri_data(uri))
        return found


def _uri_data(uri: Any) -> dict[str, Any] | None:
    """``data.uri`` of a refusal: the URI when it is one (the transport bounds its length)."""
    return {"uri": uri} if type(uri) is str else None


def _no_args() -> None:
    """A skill file takes no arguments."""


def _reader(content: dict[str, Any]) -> Any:
    def read() -> dict[str, Any]:
        return dict(content)
    return read


def _caller(fn: Any) -> Any:
    async def call(kwargs: dict[str, Any]) -> Any:
        return fn()
    return call


def plug_skills(s: Skills, seam: Seam) -> None:
    """Serve ``s`` through ``seam``: its files as resources, the methods, the declaration."""
    seam.add(*s.definitions())
    size = seam.settings.list_page_size

    async def list_skills(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        items, nxt = page(s.entries, params.get("cursor"), size)
        out: dict[str, Any] = {"skills": list(items)}
        if nxt is not None:
            out["nextCursor"] = nxt
        return out

    async def get_skill(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        return {"skill": s.get(params.get("uri")).entry()}

    async def read_directory(core: ServerCore, params: dict[str, Any], req: Inbound) -> dict[str, Any]:
        items, nxt = page(s.children(params.get("uri")), params.get("cursor"), size)
        out: dict[str, Any] = {"resources": list(items)}
        if nxt is not None:
            out["nextCursor"] = nxt
        return out

    seam.add_method("skills/list", list_skills, gate="resources", cache_hint=s.cache_hint)
    seam.add_method("skills/get", get_skill, gate="resources", cache_hint=s.cache_hint)
    if s.directory_read:
        seam.add_method("resources/directory/read", read_directory, gate="resources")
    seam.declare(SKILLS, s.settings())
