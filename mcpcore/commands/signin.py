"""``--oauth`` on the client verbs and ``mcpcore logout``: the sign-in of a person at a terminal
(the loopback redirect, the browser), the tokens kept in the user's config folder."""

from __future__ import annotations

import argparse
import sys

from ..client import FileTokenStore, LoopbackRedirect, OAuth
from .errors import UsageError

__all__ = ["cli_oauth", "logout_command"]


def cli_oauth(url: str, client: str | None, timeout: float) -> OAuth:
    """The CLI's :class:`~mcpcore.client.OAuth` for ``url``: a file store
    (``$XDG_CONFIG_HOME/mcpcore/oauth.json``), the loopback redirect with the browser
    (``$MCPCORE_OAUTH_BROWSER`` or the system's), and ``client``: a client id, or the https URL
    of a client metadata document."""
    if client is not None and client.startswith("http://"):
        raise UsageError(f"--oauth-client {client!r}: a client metadata document is served over https")
    metadata = client if client is not None and client.startswith("https://") else None
    return OAuth(on_authorize=LoopbackRedirect(timeout=timeout), store=FileTokenStore(), server=url,
                 client_id=None if metadata else client, client_metadata_url=metadata, client_name="mcpcore CLI")


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
