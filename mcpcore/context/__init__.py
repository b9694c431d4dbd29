"""The per-request ``Context`` and its facets."""

from .context import Context, RequestContext, create_request_context, with_extra
from .enrich import ContentCollect, Enrich
from .inbound import AuthInfo, ContextServices, Inbound
from .log import ContextLogger
from .outbound import NullOutbound, Outbound
from .signal import CancelSignal
from .state import ContextState, StateItem, StatePage

__all__ = [
    "AuthInfo",
    "CancelSignal",
    "ContentCollect",
    "Context",
    "ContextLogger",
    "ContextServices",
    "ContextState",
    "Enrich",
    "Inbound",
    "NullOutbound",
    "Outbound",
    "RequestContext",
    "StateItem",
    "StatePage",
    "create_request_context",
    "with_extra",
]
