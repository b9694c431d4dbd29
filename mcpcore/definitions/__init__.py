"""Tool, resource and prompt definitions: decorators and the specs they attach."""

from .prompts import PromptDefinition, prompt
from .resources import CacheHint, ResourceDefinition, resource
from .tools import ToolDefinition, tool

__all__ = ["CacheHint", "PromptDefinition", "ResourceDefinition", "ToolDefinition", "prompt", "resource", "tool"]
