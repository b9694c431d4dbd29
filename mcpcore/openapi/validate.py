"""Checking values against the generated schemas, each problem named by its field path.

Arguments are checked before any request leaves (a bad one is the usual ``invalid_arguments``
error, ``data.issues`` listing ``{"path": "owner.name", "message": ...}``); a response is checked
against the output schema after (:func:`output_problems`), which the caller of the tool only
sees when strict output was asked for."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError, JsonRpcErrorCode, McpError, quoted

__all__ = ["ArgumentsValidator", "field_path", "output_problems", "validator_for"]

HINT = "Check the tool's inputSchema and call it again with corrected arguments."
_MAX_ISSUES = 20


def validator_for(schema: dict[str, Any]) -> Any:
    """A JSON Schema 2020-12 validator of ``schema`` (``jsonschema``, the ``openapi`` extra).

    Raises:
        ConfigurationError: jsonschema is not installed.
    """
    try:
        from jsonschema import Draft202012Validator
    except ImportError:  # pragma: no cover - the extra is part of the dev install
        raise ConfigurationError("OpenAPI tools check arguments and responses with jsonschema: "
                                 "pip install 'mcpcore[openapi]'") from None
    return Draft202012Validator(schema)


def field_path(error: Any) -> str:
    """``owner.name`` or ``items.0.id``: where ``error`` is, a missing property named too."""
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = next((r for r in error.validator_value if isinstance(error.instance, dict)
                        and r not in error.instance), None)
        if missing is not None:
            parts.append(str(missing))
    return ".".join(parts)


def _message(error: Any) -> str:
    if error.validator == "required":
        return "Field required"
    if error.validator == "type":
        expected = error.validator_value
        return f"should be of type {expected if isinstance(expected, str) else ' or '.join(expected)}"
    if error.validator == "enum":
        return f"should be one of {quoted(', '.join(map(str, error.validator_value)), 200)}"
    if error.validator == "additionalProperties":
        return "unexpected field(s)"
    if error.validator in ("anyOf", "oneOf"):
        kinds = [str(b["type"]) for b in error.validator_value
                 if isinstance(b, dict) and isinstance(b.get("type"), str)]
        if len(kinds) == len(error.validator_value):
            return f"should be of type {' or '.join(kinds)}"
        return "matches none of the allowed forms"
    return quoted(str(error.message), 200)


def _branches(error: Any) -> list[Any]:
    """For an ``anyOf``/``oneOf`` failure, the errors of the branch the value was meant for (one
    that did not fail on its type at the value itself), so the path reaches the field; else it."""
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return [error]
    by_branch: dict[Any, list[Any]] = {}
    for sub in error.context:
        by_branch.setdefault(sub.schema_path[0] if sub.schema_path else 0, []).append(sub)
    meant = [errs for errs in by_branch.values()
             if not any(e.validator == "type" and not list(e.relative_path) for e in errs)]
    if len(meant) != 1:
        return [error]
    return [leaf for sub in meant[0] for leaf in _branches(sub)]


def _ordered(errors: Any) -> list[Any]:
    return [leaf for e in errors for leaf in _branches(e)]  # in the schema's order


class ArgumentsValidator:
    """The tool's argument check, in the shape the server runs (``validate_python``): the
    arguments themselves, or the ``invalid_arguments`` error naming every field path."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.validator = validator_for(schema)

    def validate_python(self, value: Any, /) -> Any:
        """``value`` when it fits the schema.

        Raises:
            McpError: ``InvalidParams`` with ``data.issues`` (``path``, ``message``).
        """
        errors = _ordered(self.validator.iter_errors(value))
        if not errors:
            return value
        issues = [{"path": quoted(field_path(e)), "message": _message(e)} for e in errors[:_MAX_ISSUES]]
        first = issues[0]
        raise McpError(JsonRpcErrorCode.InvalidParams,
                       f"Invalid arguments: {first['path'] or 'input'}: {first['message']}",
                       {"reason": "invalid_arguments", "recovery": {"hint": HINT}, "issues": issues})


def output_problems(validator: Any, value: Any, limit: int = 10) -> list[dict[str, str]]:
    """Where ``value`` departs from the output schema: ``[{"path", "message"}]`` (at most ``limit``)."""
    out = []
    for error in _ordered(validator.iter_errors(value)):
        out.append({"path": field_path(error) or "(root)", "message": _message(error)})
        if len(out) >= limit:
            break
    return out
