"""Tool, resource and prompt definitions: decorators and the specs they attach."""

from .prompts import PromptDefinition, prompt
from .resources import CacheHint, ResourceDefinition, resource
from .tasks import TaskSupport
from .tools import ToolDefinition, tool

__all__ = ["CacheHint", "PromptDefinition", "ResourceDefinition", "TaskSupport", "ToolDefinition", "prompt", "resource",
           "tool"]
