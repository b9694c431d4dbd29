"""How the filesystem provider lays keys out on disk: names, folders and the value file format
(see :mod:`mcpcore.storage.filesystem` for the layout)."""

from __future__ import annotations

import re
import string
import struct
from functools import lru_cache
from hashlib import sha256

__all__ = ["CHUNK", "HEADER", "MAGIC", "SAFE_TENANT", "beyond", "entry_of", "key_path", "parse_value", "tenant_dir"]

HEADER = struct.Struct(">4sd")
MAGIC = b"mcs1"
CHUNK = 96
SAFE_TENANT = re.compile(r"[A-Za-z0-9._-]{1,100}")
_ENC = str.maketrans({c: "^" + c.lower() for c in string.ascii_uppercase})
_DEC = re.compile(r"\^([a-z])")


def _enc(segment: str) -> str:
    return segment.translate(_ENC)


def _dec(name: str) -> str:
    return _DEC.sub(lambda m: m.group(1).upper(), name) if "^" in name else name


@lru_cache(maxsize=8192)
def key_path(key: str) -> tuple[tuple[str, ...], str]:
    """The folders and file name of ``key``, relative to its tenant folder.

    A segment shorter than ``CHUNK`` is a ``.d`` folder (covering every key under ``segment/``) or
    the ``.v`` file; a longer one is consumed ``CHUNK`` characters at a time by ``.c`` folders
    (each covering every key that starts with the chunk). The ranges of sibling entries never
    overlap, so sorting siblings by the start of their range gives key order.
    """
    folders: list[str] = []
    rest = key
    while True:
        slash = rest.find("/")
        segment = rest if slash < 0 else rest[:slash]
        if len(segment) >= CHUNK:
            folders.append(_enc(rest[:CHUNK]) + ".c")
            rest = rest[CHUNK:]
        elif slash < 0:
            return tuple(folders), _enc(segment) + ".v"
        else:
            folders.append(_enc(segment) + ".d")
            rest = rest[slash + 1:]


def entry_of(name: str) -> tuple[str, bool] | None:
    """``(range start relative to the folder, is_folder)`` of a directory entry; ``None`` if internal."""
    base, dot, suffix = name.rpartition(".")
    if not dot:
        return None
    if suffix == "v":
        return _dec(base), False
    if suffix == "d":
        return _dec(base) + "/", True
    if suffix == "c":
        return _dec(base), True
    return None


def tenant_dir(tenant: str) -> str:
    if SAFE_TENANT.fullmatch(tenant):
        return "t." + _enc(tenant)
    return "x." + sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()


def parse_value(data: bytes) -> tuple[float, bytes] | None:
    if len(data) < HEADER.size:
        return None
    magic, expires = HEADER.unpack_from(data)
    if magic != MAGIC:
        return None
    return expires, data[HEADER.size:]


def beyond(start: str, prefix: str) -> bool:
    """Whether a range starting at ``start`` (and every later one) lies past all keys under ``prefix``."""
    return start > prefix and not start.startswith(prefix) and not prefix.startswith(start)
