"""Transports: streamable HTTP (with SSE), the 2024-11-05 HTTP+SSE pair, and stdio."""
