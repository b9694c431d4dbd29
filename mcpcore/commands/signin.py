"""``mcpcore logout``: forget what ``--oauth`` kept for a server (the sign-in itself is
:func:`mcpcore.commands.targets.cli_oauth`), revoking it at the authorization server."""

from __future__ import annotations

import argparse
import sys

from ..client import FileTokenStore, OAuth
from .targets import UsageError

__all__ = ["logout_command"]


async def logout_command(args: argparse.Namespace) -> int:
    """``mcpcore logout URL`` (or ``--all``): revoke at the authorization server, then forget."""
    store = FileTokenStore()
    if args.all_servers == (args.url is not None):
        raise UsageError("name the server (mcpcore logout URL) or give --all")
    servers = await store.servers() if args.all_servers else [args.url]
    for server in servers:
        revoked = await OAuth(store=store, server=server).logout()
        if revoked is None:
            print(f"no tokens kept for {server} (in {store.path})", file=sys.stderr)
        elif revoked:
            print(f"signed out of {server}: the authorization server revoked the grant", file=sys.stderr)
        else:
            print(f"signed out of {server}: the tokens are forgotten here (the authorization server could not be "
                  "told; they end when they expire)", file=sys.stderr)
    return 0
