"""Streamable HTTP, both protocol eras on one endpoint (see :mod:`.endpoint` for the way a
request takes through the package)."""

from .endpoint import HttpTransport
from .sessions import deliver_route
from .streams import STANDALONE

__all__ = ["STANDALONE", "HttpTransport", "deliver_route"]
