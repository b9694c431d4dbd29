"""JSON Schema (2020-12) of pydantic models and adapters, as mcpcore advertises them: without the
titles pydantic invents from field and model names. A leaf module: definitions build input and
output schemas with it, and the context's elicitation builders the requested schemas."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

__all__ = ["json_schema"]


class _Schema(GenerateJsonSchema):
    """Pydantic's generator without the titles it invents from field and model names."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> Any:
        out = super().model_schema(schema)
        cls = schema.get("cls")
        explicit = getattr(cls, "model_config", {}).get("title") if cls is not None else None
        if isinstance(out, dict) and "title" in out and not explicit:
            out.pop("title", None)
        return out


def json_schema(adapter_or_model: TypeAdapter[Any] | type[BaseModel], *, mode: str = "validation") -> dict[str, Any]:
    """The JSON Schema (2020-12) of a model or adapter, without generated titles."""
    if isinstance(adapter_or_model, TypeAdapter):
        schema = adapter_or_model.json_schema(schema_generator=_Schema, mode=mode)  # type: ignore[arg-type]
    else:
        schema = adapter_or_model.model_json_schema(schema_generator=_Schema, mode=mode)  # type: ignore[arg-type]
    schema.pop("title", None)
    return schema
