"""Function signatures to pydantic models and portable JSON Schemas, computed once per definition."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model
from pydantic_core import SchemaValidator

from ..errors import ConfigurationError
from ..jsonschema import json_schema
from .checks import input_type_error, raise_first, signature_mistakes
from .common import is_context_annotation, type_hints
from .depends import Dependency, dependency_of, plan_dependency

__all__ = ["ArgsPlan", "OutputPlan", "args_plan", "json_schema", "object_schema", "output_plan", "plan_input_schema"]


def plan_input_schema(plan: ArgsPlan, owner: str) -> dict[str, Any]:
    """The closed input schema of ``plan`` (:func:`object_schema`), a type without a JSON Schema
    named with its parameter and ``owner``."""
    try:
        return object_schema(plan.model, strict=True)
    except Exception as exc:
        model = plan.model
        fields = {n: (f.annotation, f) for n, f in model.model_fields.items()}
        prefix = f"{plan.model_param}." if plan.model_param else ""
        raise input_type_error(owner, fields, model.model_config, exc, prefix=prefix) from exc


def object_schema(model: type[BaseModel], *, strict: bool) -> dict[str, Any]:
    """An input schema: always ``type: object`` with ``properties``; closed when ``strict``."""
    schema = json_schema(model)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    if strict and model.model_config.get("extra") != "allow":
        schema["additionalProperties"] = False
    return schema


class InputValidator(Protocol):
    def validate_python(self, input: Any, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class ArgsPlan:
    """How a callable's arguments are built from validated input.

    ``model_param`` names the single pydantic-model parameter (the model *is* the input);
    otherwise ``names`` lists the plain parameters filled from the synthesised model.
    ``deps`` are the parameters filled by dependencies (``Depends``), never part of the input.
    """

    model: type[BaseModel]
    model_param: str | None
    names: tuple[str, ...]
    ctx_param: str | None
    field_keys: frozenset[str]
    validator: InputValidator
    fields_only: bool = False
    deps: tuple[tuple[str, Dependency], ...] = ()
    plain_deps: tuple[tuple[str, Callable[..., Any], bool, str | None], ...] | None = None
    """When every dependency is an async function or async generator taking at most the
    ``Context``, each one once: ``(parameter, callable, is a generator, its Context parameter)``
    for the invoke pipeline's short path; else ``None``."""

    def validate(self, args: Any) -> Any:
        """Validate the input (``ValidationError`` when it does not fit); pass the result to
        :meth:`kwargs`."""
        return self.validator.validate_python(args)

    def kwargs(self, validated: Any) -> dict[str, Any]:
        if self.model_param is not None:
            return {self.model_param: validated}
        if self.fields_only:
            return dict(validated[0])
        return dict(validated.__dict__)  # the synthesised model holds exactly the parameters


def _fields_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """For a model synthesised from a signature: a validator of its fields alone, with the same
    rules and errors, that yields ``(values, extra, fields_set)`` without building an instance
    nobody reads (``None`` when the schema is not the plain shape this relies on)."""
    core = model.__pydantic_core_schema__
    if core.get("type") != "model" or core.get("custom_init") or core.get("post_init"):
        return None
    inner = core["schema"]
    if inner.get("type") != "model-fields" or inner.get("model_validators"):
        return None
    return SchemaValidator(inner, core.get("config"))


def args_plan(fn: Callable[..., Any], owner: str, *, model_name: str, allow_model: bool = True,
              localns: dict[str, Any] | None = None, kind: str = "tool") -> ArgsPlan:
    """Analyse ``fn``'s signature once: find the ``Context`` parameter and build the input model.

    Raises:
        ConfigurationError: a parameter that cannot work as a ``kind``'s input (see
            :mod:`mcpcore.definitions.checks`), or of a type that cannot be an input.
    """
    sig = inspect.signature(fn)
    hints = type_hints(fn, localns)
    raise_first(owner, signature_mistakes(fn, hints, kind=kind))
    ctx_param: str | None = None
    params: list[inspect.Parameter] = []
    deps: list[tuple[str, Dependency]] = []
    for p in sig.parameters.values():
        ann = hints.get(p.name, p.annotation)
        if is_context_annotation(ann):
            if ctx_param is not None:
                raise ConfigurationError(f"{owner}: more than one Context parameter")
            ctx_param = p.name
            continue
        marker = dependency_of(ann, p.default)
        if marker is not None:
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise ConfigurationError(f"{owner}: dependency parameter {p.name!r} is positional-only")
            deps.append((p.name, plan_dependency(marker, ann, owner, p.name, localns)))
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ConfigurationError(f"{owner}: *args and **kwargs cannot be described to a client; "
                                     "declare each argument or take one pydantic model")
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ConfigurationError(f"{owner}: positional-only parameter {p.name!r} is not supported")
        params.append(p)
    extra = _extras(deps)
    if allow_model and len(params) == 1:
        ann = hints.get(params[0].name, params[0].annotation)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
            keys = frozenset(_field_keys(model))
            return ArgsPlan(model, params[0].name, (), ctx_param, keys, model.__pydantic_validator__, **extra)
    fields: dict[str, Any] = {}
    for p in params:
        if p.name.startswith("_"):
            raise ConfigurationError(f"{owner}: parameter {p.name!r} starts with '_'; such keys are reserved for "
                                     "client artifacts and are never passed to handlers")
        ann = hints.get(p.name, p.annotation)
        if ann is inspect.Parameter.empty:
            ann = Any
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (ann, default)
    config = ConfigDict(extra="forbid")
    try:
        model = create_model(model_name, __config__=config, **fields)
    except Exception as exc:
        raise input_type_error(owner, fields, config, exc) from exc
    fv = _fields_validator(model)
    return ArgsPlan(model, None, tuple(fields), ctx_param, frozenset(_field_keys(model)),
                    fv if fv is not None else model.__pydantic_validator__, fv is not None, **extra)


def _extras(deps: list[tuple[str, Dependency]]) -> dict[str, Any]:
    plain = all(d.kind in ("async", "asyncgen") and not d.subs for _, d in deps) and \
        len({d.call for _, d in deps}) == len(deps)
    return {"deps": tuple(deps),
            "plain_deps": tuple((name, d.call, d.kind == "asyncgen", d.ctx_param) for name, d in deps)
            if deps and plain else None}


def _field_keys(model: type[BaseModel]) -> set[str]:
    keys: set[str] = set()
    for name, f in model.model_fields.items():
        keys.add(f.alias or name)
        if model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name"):
            keys.add(name)
    return keys


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """How a tool's return value becomes ``structuredContent``."""

    adapter: TypeAdapter[Any]
    model: type[BaseModel] | None
    wrap: bool
    schema: dict[str, Any]
    inner_schema: dict[str, Any]
    scalar: type | None = None

    def dump(self, value: Any, *, wrap: bool | None = None) -> Any:
        """Validate ``value`` against the declared return type and dump it as JSON data, wrapped
        as ``{"result": ...}`` when the type is not an object (unless ``wrap=False``)."""
        if self.scalar is not None and type(value) is self.scalar:
            out = value
        elif self.model is not None and type(value) is self.model:
            out = value.model_dump(mode="json", by_alias=True)
        else:
            out = self.adapter.dump_python(self.adapter.validate_python(value), mode="json", by_alias=True)
        return {"result": out} if (self.wrap if wrap is None else wrap and self.wrap) else out


def _is_objectish(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def output_plan(ann: Any, owner: str) -> OutputPlan:
    """Plan the structured output of a return annotation; scalars and lists are wrapped as
    ``{"result": ...}`` so ``outputSchema`` stays an object (as 2025-era clients require)."""
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(ann)
        schema = json_schema(adapter, mode="serialization")
    except Exception as exc:
        raise ConfigurationError(f"{owner}: return annotation {ann!r} has no JSON Schema: {exc}") from exc
    model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    if _is_objectish(schema):
        return OutputPlan(adapter, model, False, schema, schema)
    inner = dict(schema)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    scalar = ann if ann in (str, int, bool) else None  # their JSON form is the value itself
    return OutputPlan(adapter, None, True, wrapped, inner, scalar)
