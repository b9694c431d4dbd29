"""Content blocks, resource contents and prompt messages as they appear on the wire.

Handlers may return these models or plain dicts of the same shape. Binary data may be given as
``bytes``; it is base64-encoded for the wire.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "PromptMessage",
    "Resource",
    "ResourceLink",
    "TextContent",
    "TextResourceContents",
    "ToolResult",
    "to_wire",
]


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


def _b64(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


class Annotations(_Wire):
    """Hints for clients about a content block or resource."""

    audience: list[Literal["user", "assistant"]] | None = None
    priority: Annotated[float, Field(ge=0, le=1)] | None = None
    last_modified: str | None = Field(default=None, alias="lastModified")


class TextContent(_Wire):
    """A text block."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ImageContent(_Wire):
    """A base64 image (``data`` may be given as bytes)."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str = Field(alias="mimeType")
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    _encode = field_validator("data", mode="before")(_b64)


class AudioContent(_Wire):
    """A base64 audio clip (``data`` may be given as bytes)."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str = Field(alias="mimeType")
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    _encode = field_validator("data", mode="before")(_b64)


class Resource(_Wire):
    """A resource as listed by ``resources/list``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = Field(default=None, alias="mimeType")
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceLink(Resource):
    """A link to a resource inside a tool result."""

    type: Literal["resource_link"] = "resource_link"


class TextResourceContents(_Wire):
    """Text contents of a resource."""

    uri: str
    mime_type: str | None = Field(default=None, alias="mimeType")
    text: str
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class BlobResourceContents(_Wire):
    """Binary contents of a resource (``blob`` may be given as bytes)."""

    uri: str
    mime_type: str | None = Field(default=None, alias="mimeType")
    blob: str
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    _encode = field_validator("blob", mode="before")(_b64)


class EmbeddedResource(_Wire):
    """A resource embedded in a tool result or prompt message."""

    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
CONTENT_TYPES: tuple[type[BaseModel], ...] = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


class PromptMessage(_Wire):
    """One message of a prompt."""

    role: Literal["user", "assistant"]
    content: ContentBlock


class ToolResult(_Wire):
    """Full control over a tool result: content blocks, structured content and the error flag."""

    content: list[ContentBlock | dict[str, Any]] = Field(default_factory=list)
    structured_content: Any = Field(default=None, alias="structuredContent")
    is_error: bool = Field(default=False, alias="isError")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def to_wire(block: Any) -> dict[str, Any]:
    """A content block, resource contents or message as a wire dict."""
    if isinstance(block, BaseModel):
        return block.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(block, dict):
        return block
    raise TypeError(f"expected a content model or dict, got {type(block).__name__}")
