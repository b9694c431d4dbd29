"""``UsageError``: what the command-line verbs print as one line and exit 2 on."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake on the command line or a server that cannot be reached: printed as one line
    (with the fix), exit 2."""
