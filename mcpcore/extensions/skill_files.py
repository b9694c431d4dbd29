"""The files of a skill folder, found and read without surprises.

A skill serves regular files only, inside the skills folder, whose name and real path hold no
hidden part (a leading ``.``): a link named ``notes.md`` to ``.env`` is left out like ``.env``
itself. A FIFO, socket, device or dangling link is skipped with a warning, never opened in a way
that could block. Sizes come from ``stat``, so a folder over its byte budget is refused before a
byte is read, and each file is then read within what remains of the budget (a file that grew
since it was listed cannot take more).
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError

__all__ = ["Listed", "list_files", "read_within"]

log = logging.getLogger("mcpcore.skills")
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True, slots=True)
class Listed:
    """A file a skill serves: its path under the skill folder, its real path and its size."""

    path: Path
    real: Path
    size: int


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(p.startswith(".") for p in parts)


def list_files(root: Path, folder: Path) -> list[Listed]:
    """The files ``folder`` serves, in a stable order (``root``: the skills folder, resolved).

    Raises:
        ConfigurationError: a link leads out of ``root``.
    """
    out: list[Listed] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            real = path.resolve()
            if not real.is_relative_to(root):
                raise ConfigurationError(f"{path}: links outside the skills folder")
            if _hidden(real.relative_to(root).parts):
                log.warning("skills: %s links to a hidden file; not served", path)
                continue
            try:
                st = os.stat(real)
            except OSError as exc:
                log.warning("skills: %s cannot be read (%s); not served", path, exc.strerror or type(exc).__name__)
                continue
            if not stat.S_ISREG(st.st_mode):
                log.warning("skills: %s is not a regular file (a FIFO, socket or device); not served", path)
                continue
            out.append(Listed(path, real, st.st_size))
    return out


def read_within(listed: Listed, limit: int) -> bytes | None:
    """The bytes of ``listed``, or ``None`` when it holds more than ``limit`` bytes now (only
    ``limit + 1`` are read to tell). Opened without blocking, and refused unless it is still a
    regular file."""
    fd = os.open(listed.real, os.O_RDONLY | _NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigurationError(f"{listed.path}: is no longer a regular file")
        data = fh.read(limit + 1)
    return data if len(data) <= limit else None
