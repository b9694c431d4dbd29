"""Names behind a namespace: ``billing_search``, ``data://billing/info``, each checked against the
tool-name budget of model providers and against what the parent already serves."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["Namespace", "check_namespace"]


def check_namespace(namespace: str, separator: str) -> None:
    """Fail on a namespace or separator that cannot prefix names and URIs reversibly."""
    if not isinstance(namespace, str) or not namespace or not all(c.isalnum() or c in "-." for c in namespace):
        raise ConfigurationError(f"namespace {namespace!r} must be letters, digits, '-' or '.' (it prefixes "
                                 "tool names and goes into resource URIs)")
    if not isinstance(separator, str) or not separator or not all(c.isalnum() or c in "_-." for c in separator):
        raise ConfigurationError(f"separator {separator!r} must be one or more of letters, digits, '_', '-', '.'")


@dataclass(frozen=True, slots=True)
class Namespace:
    """How one mounted source's names appear in the parent.

    Tools and prompts become ``<namespace><separator><name>``; a resource URI gains the namespace
    as its first path segment (``data://info`` -> ``data://billing/info``, a template likewise), MCP
    App views too (``ui://chart/view.html`` -> ``ui://billing/chart/view.html``; the mount rewrites the
    tool's ``_meta.ui.resourceUri`` to match).
    """

    namespace: str
    separator: str = "_"
    name_limit: int = 64
    client_prefix: str = ""

    def name(self, name: str) -> str:
        """The parent's name of the child's tool or prompt ``name``."""
        return f"{self.namespace}{self.separator}{name}"

    def child_name(self, name: str) -> str | None:
        """The child's name behind the parent's ``name`` (``None``: not one of this namespace's)."""
        prefix = self.namespace + self.separator
        return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None

    def uri(self, uri: str) -> str:
        """The parent's URI (or URI template) of the child's ``uri``."""
        scheme, sep, rest = uri.partition("://")
        if sep:
            return f"{scheme}://{self.namespace}/{rest}"
        scheme, sep, rest = uri.partition(":")
        return f"{scheme}:{self.namespace}/{rest}" if sep else f"{self.namespace}/{uri}"

    def child_uri(self, uri: str) -> str | None:
        """The child's URI behind the parent's ``uri`` (``None``: not one of this namespace's)."""
        for sep in ("://", ":"):
            scheme, found, rest = uri.partition(sep)
            if found:
                head = self.namespace + "/"
                return f"{scheme}{sep}{rest[len(head):]}" if rest.startswith(head) else None
        head = self.namespace + "/"
        return uri[len(head):] if uri.startswith(head) else None

    def check_budget(self, kind: str, child_name: str, where: str) -> str:
        """The parent's name of tool ``child_name``, or a :class:`ConfigurationError` when it (with the
        client prefix the user declared) exceeds the budget."""
        full = self.name(child_name)
        seen = len(self.client_prefix) + len(full)
        if seen > self.name_limit:
            shown = f" with the client prefix {self.client_prefix!r}" if self.client_prefix else ""
            raise ConfigurationError(
                f"{where}: {kind} {child_name!r} becomes {full!r}, {seen} characters{shown}, over the budget of "
                f"{self.name_limit} (MCP_TOOL_NAME_LIMIT; model providers refuse longer tool names). Fix: a shorter "
                f"namespace or separator, a shorter name in the child (name=...), or raise MCP_TOOL_NAME_LIMIT if "
                f"every client you serve accepts longer names.")
        if len(full) > 128:
            raise ConfigurationError(f"{where}: {kind} {child_name!r} becomes {full!r}, over the protocol's 128 "
                                     "characters. Fix: a shorter namespace or name.")
        return full
