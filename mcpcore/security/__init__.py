"""Integrity for state that round-trips through clients."""

from .sealing import RequestStateSealer

__all__ = ["RequestStateSealer"]
