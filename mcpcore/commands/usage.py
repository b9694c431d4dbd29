"""The one error of the command line's verbs (its own module, so every verb may raise it)."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A mistake on the command line or a server that cannot be reached: printed as one line
    (with the fix), exit 2."""
