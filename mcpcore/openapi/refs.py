"""OpenAPI documents and their ``$ref``\\ s: loading (JSON or YAML), JSON pointers, references into
the same document, files beside it and, only when allowed, remote documents.

Every failure is a :class:`SpecError` naming the JSON pointer where it was met, so the operation
using it can be reported (and skipped) instead of failing the whole build."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import yaml

from .. import _json

__all__ = ["MAX_DOCUMENT_BYTES", "Document", "Resolver", "SpecError", "load_document", "pointer_join"]

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""The largest spec or referenced document read (GitHub's full description is about 12 MB)."""
_MAX_HOPS = 32


class SpecError(Exception):
    """Something in the document that cannot become part of a tool, where it was met.

    Args:
        pointer: the JSON pointer (``#/paths/~1pets/get/...``), with the document when not the root.
        reason: what is wrong, in a sentence.
    """

    def __init__(self, pointer: str, reason: str) -> None:
        super().__init__(f"{pointer}: {reason}")
        self.pointer = pointer
        self.reason = reason


def pointer_join(pointer: str, *keys: str | int) -> str:
    """``pointer`` extended by ``keys`` (escaped as RFC 6901 says)."""
    return pointer + "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)


@dataclass(eq=False)
class Document:
    """One parsed document: the spec itself or one it references."""

    uri: str
    """``file:///...``, ``https://...`` or ``memory:`` for a spec given as data."""
    data: Any
    label: str = ""
    """How errors name it: empty for the root spec, else its file name or URL."""

    def at(self, pointer: str) -> str:
        """``pointer`` as an error names it (``other.yaml#/Pet`` outside the root spec)."""
        return f"{self.label}{pointer}" if self.label else pointer


def _parse(raw: bytes, where: str) -> Any:
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise SpecError(where, f"the document is over {MAX_DOCUMENT_BYTES} bytes")
    try:
        return _json.loads(raw)
    except ValueError:
        pass
    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise SpecError(where, f"neither JSON nor YAML ({str(exc).splitlines()[0]})") from None


def load_document(source: Mapping[str, Any] | str | Path, *, base: str | Path | None = None) -> Document:
    """The spec as a :class:`Document`: given as data (``base``: the folder its relative refs are
    read from), a path to a JSON or YAML file, or JSON/YAML text.

    Raises:
        SpecError: the file cannot be read or parsed.
    """
    if isinstance(source, Mapping):
        folder = Path(base).resolve() if base is not None else None
        uri = (folder / "openapi.json").as_uri() if folder is not None else "memory:"
        return Document(uri, dict(source))
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        data = _parse(source.encode(), "#")
        folder = Path(base).resolve() if base is not None else None
        return Document((folder / "openapi.json").as_uri() if folder else "memory:", data)
    path = Path(source).resolve()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError("#", f"cannot read {path}: {exc.strerror}") from None
    return Document(path.as_uri(), _parse(raw, "#"))


@dataclass
class Resolver:
    """Follows ``$ref``\\ s from the root document.

    Args:
        root: the spec.
        allow_remote: fetch ``http(s)://`` references (off by default: a spec should not make the
            server reach out at start-up unless asked).
        fetch: how a remote document is read (default: a bounded ``httpx.get``).
    """

    root: Document
    allow_remote: bool = False
    fetch: Callable[[str], bytes] | None = None
    documents: dict[str, Document] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.documents[self.root.uri] = self.root
        parts = urlsplit(self.root.uri)
        self._folder = Path(unquote(parts.path)).parent if parts.scheme == "file" else None

    def _document(self, uri: str, where: str) -> Document:
        found = self.documents.get(uri)
        if found is not None:
            return found
        parts = urlsplit(uri)
        if parts.scheme == "file":
            path = Path(unquote(parts.path)).resolve()
            if self._folder is None or not path.is_relative_to(self._folder):
                raise SpecError(where, f"the reference leaves the spec's folder ({path.name}); only files beside "
                                "the spec (or below it) are read")
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise SpecError(where, f"cannot read the referenced file {path.name}: {exc.strerror}") from None
            label = str(path.relative_to(self._folder))
        elif parts.scheme in ("http", "https"):
            if not self.allow_remote:
                raise SpecError(where, f"remote reference {uri[:200]} is not followed (pass allow_remote_refs=True "
                                "to fetch it at build time)")
            try:
                raw = (self.fetch or _fetch)(uri)
            except OSError as exc:  # httpx's errors are not; caught below
                raise SpecError(where, f"cannot fetch {uri[:200]}: {exc}") from None
            except Exception as exc:
                if isinstance(exc, SpecError):
                    raise
                raise SpecError(where, f"cannot fetch {uri[:200]}: {type(exc).__name__}") from None
            label = uri
        else:
            raise SpecError(where, f"cannot resolve a reference relative to {self.root.uri[:60]!r}: give the spec "
                            "as a file path, or base= for a spec given as data")
        doc = Document(uri, _parse(raw, where), label)
        self.documents[uri] = doc
        return doc

    def lookup(self, ref: str, doc: Document, where: str) -> tuple[Document, str, Any]:
        """The target of ``ref`` met in ``doc`` at ``where``: ``(document, pointer, value)``.

        Raises:
            SpecError: a missing target, a file outside the spec's folder, a remote reference
                when not allowed, a document that cannot be read.
        """
        if not isinstance(ref, str):
            raise SpecError(where, "$ref must be a string")
        location, _, fragment = ref.partition("#")
        target = doc if not location else self._document(urljoin(doc.uri, location).partition("#")[0], where)
        pointer = "#" + unquote(fragment)
        value: Any = target.data
        for token in unquote(fragment).split("/")[1:] if fragment else ():
            key = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                raise SpecError(where, f"$ref {ref[:200]!r} names nothing")
        return target, pointer, value

    def deref(self, node: Any, doc: Document, where: str) -> tuple[Document, str, Any]:
        """``node`` with its (chained) ``$ref`` followed; for parameters, bodies and responses."""
        pointer = where
        for _ in range(_MAX_HOPS):
            if not (isinstance(node, dict) and "$ref" in node):
                return doc, pointer, node
            doc, pointer, node = self.lookup(node["$ref"], doc, doc.at(pointer))
        raise SpecError(where, "$ref chain longer than 32 hops (a reference to itself?)")


def _fetch(url: str) -> bytes:
    import httpx

    with httpx.Client(timeout=10.0, follow_redirects=True) as client, client.stream("GET", url) as response:
        response.raise_for_status()
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_DOCUMENT_BYTES:
                raise SpecError(url, f"the remote document is over {MAX_DOCUMENT_BYTES} bytes")
            chunks.append(chunk)
    return b"".join(chunks)
