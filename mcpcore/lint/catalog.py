"""The rule catalog: every rule id the linter can report, with its severity and a generic fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "Rule", "Severity"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule.

    Attributes:
        id: the stable identifier printed on every finding and used to silence it.
        severity: the default severity of its findings.
        summary: what the rule checks, in one sentence.
        fix: the general remedy (each finding carries a concrete one).
        strict_only: reported only with ``portability="strict"``.
    """

    id: str
    severity: Severity
    summary: str
    fix: str
    strict_only: bool = False


_CATALOG: tuple[Rule, ...] = (
    # descriptions and names
    Rule("description-required", "error",
         "Every tool, resource and prompt has a description (a warning for resources, where it is optional).",
         "pass description= or write a docstring"),
    Rule("description-specific", "warning",
         "A description says something: not a placeholder, not the name again, at least three words.",
         "describe what it does, what it returns and when to use it"),
    Rule("name-format", "error",
         "Names are 1-128 characters of letters, digits, '_', '-' and '.'.",
         "rename it"),
    Rule("name-unique", "error",
         "No two tools or prompts share a name, and no two resources a URI.",
         "rename or remove one of them"),
    Rule("name-collision", "warning",
         "No two tools (or prompts) differ only by case or separators (get_user / getUser / get-user).",
         "merge them or give them names that differ in words"),
    Rule("tool-name-portable", "warning",
         "Tool names avoid '.' and stay within 64 characters, the limit of OpenAI and Anthropic function names.",
         "use letters, digits, '_' and '-' only, at most 64 characters"),
    # schemas
    Rule("schema-serializable", "error",
         "What tools/list, prompts/list and resources/list send survives a JSON round trip unchanged.",
         "use JSON values only (no NaN/Infinity, sets, non-string keys or objects)"),
    Rule("schema-format-portability", "error",
         "Schemas use only the 'format' values common clients accept "
         "(date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid).",
         "use a plain string and state the format in the field description"),
    Rule("schema-no-discriminator-keyword", "warning",
         "Schemas do not use the OpenAPI 'discriminator' keyword (OpenAI ignores it, Gemini rejects it).",
         "drop Field(discriminator=...) and let the Literal tag of each branch decide"),
    Rule("schema-anyof-needs-type", "warning",
         "Every anyOf/oneOf branch declares a 'type' (Gemini refuses branches without one).",
         "give each branch a type, or express optionality by leaving the field out of 'required'"),
    Rule("schema-no-defs", "warning",
         "Strict portability: schemas are self-contained, without $defs/$ref (Gemini rejects references).",
         "inline the nested models, or accept the limitation for clients that resolve references",
         strict_only=True),
    Rule("schema-dialect-tag", "warning",
         "No '$schema' other than 2020-12 (MCP's default dialect); in strict mode no '$schema' at all.",
         "remove the '$schema' keyword"),
    Rule("input-field-description", "warning",
         "Every input field (nested objects and $defs included) has a description.",
         "add Field(description=...) to the parameter or model field"),
    Rule("output-field-description", "warning",
         "Every field of the output schema (nested objects and $defs included) has a description.",
         "add Field(description=...) to the output model field"),
    # error contracts
    Rule("error-reason-format", "error",
         "Error contract reasons are snake_case.",
         "rename the reason in snake_case"),
    Rule("error-reason-unique", "error",
         "A definition declares each error reason once.",
         "remove or rename the duplicate entry"),
    Rule("error-reason-consistent", "warning",
         "The same reason carries the same code on every definition of the app (clients key on data.reason).",
         "use one code per reason, or a different reason"),
    Rule("error-when-required", "error",
         "Every error contract says when it happens.",
         "fill in when="),
    Rule("error-recovery-min-words", "warning",
         "Every recovery hint has at least five words of concrete guidance.",
         "say what the caller should do next, e.g. 'Broaden the query or check the spelling'"),
    Rule("error-code-reserved", "error",
         "Error codes are JsonRpcErrorCode values or outside the reserved range -32768..-32000.",
         "use a JsonRpcErrorCode member or an application code outside -32768..-32000"),
    Rule("fail-without-contract", "error",
         "A handler that calls ctx.fail declares the failures it raises (errors=[...]); without a contract "
         "ctx.fail is absent.",
         "declare errors=[ErrorContract(...)] with the reasons it fails with, or raise McpError directly"),
    # enrichment
    Rule("enrichment-field-description", "warning",
         "Every field of the enrichment model has a description.",
         "add Field(description=...) to the enrichment model field"),
    Rule("enrichment-trailer-unknown-field", "warning",
         "enrichment_trailer only names fields of the enrichment model.",
         "fix the field name or add the field to the enrichment model"),
    Rule("enrichment-trailer-render", "error",
         "A structured enrichment field (an object or a list) has a render function in enrichment_trailer, so the "
         "content[] trailer reads as markdown rather than raw JSON.",
         "add enrichment_trailer={field: {'render': fn}} returning markdown"),
    Rule("capped-list-no-truncation", "warning",
         "A tool with a cap-like input (limit, per_page, page_size, max_results, ...) that returns a list "
         "discloses truncation ('truncated' or 'totalCount' in its output or enrichment).",
         "declare truncated/shown/cap in enrichment and call ctx.enrich.truncated(...), "
         "or call ctx.enrich.total(n) with totalCount declared"),
    # format parity
    Rule("format-parity", "error",
         "format= renders every output field, so content[]-only clients see what structuredContent carries.",
         "render the field in format()"),
    Rule("format-parity-threw", "warning",
         "format= accepts any value of the output type and returns a list of content blocks.",
         "make format() total over the output type"),
    Rule("format-parity-depth-limit", "warning",
         "Output fields nested deeper than the parity walk (8 levels) cannot be verified.",
         "flatten the output, or check by hand that format() renders the field"),
    # annotations, resources, prompts
    Rule("annotation-coherence", "warning",
         "Annotations do not contradict each other (readOnlyHint with destructiveHint true).",
         "drop destructiveHint from read-only tools, or drop readOnlyHint"),
    # signatures
    Rule("signature-mistake", "error",
         "Every parameter is a typed input, the Context or a dependency: not a method's self/cls, another "
         "framework's marker (fastapi.Depends, Query), an unannotated parameter or ctx, or an HTTP request object.",
         "fix the parameter as the finding says (the decorators refuse the same mistakes)"),
    Rule("prompt-argument-type", "error",
         "Prompt arguments are what a string can carry (text, numbers, booleans, enums): clients send strings.",
         "take a str, e.g. JSON text the prompt parses, or one string argument per field"),
    # dependencies and visibility
    Rule("dependency-in-schema", "error",
         "A hand-written input_schema does not list a parameter a dependency or the Context fills.",
         "remove the parameter from input_schema"),
    Rule("visibility-covers-auth", "warning",
         "A tool's visible_to scopes include its auth= scopes, so whoever sees it may call it.",
         "add the auth= scopes to visible_to"),
    Rule("resource-name-not-uri", "warning",
         "A resource name is a readable identifier, not a URI or host.",
         "name it for what it is, e.g. name='status_page'"),
    Rule("resource-mime-type", "warning",
         "Every resource declares its MIME type.",
         "pass mime_type=, e.g. 'text/plain' or 'application/json'"),
    Rule("resource-template-list", "warning",
         "A resource template offers list= so clients can discover concrete resources.",
         "pass list= returning the concrete resources (or suppress when the space is open-ended)"),
    # MCP Apps
    Rule("app-text-fallback", "warning",
         "A tool that opens an MCP App keeps a readable text result for hosts without Apps.",
         "pass App(fallback=...) or return text"),
    Rule("app-resource-not-found", "error",
         "The ui:// view a tool opens is served, from an existing file, as text/html;profile=mcp-app.",
         "give App html= or an existing file=, or register the ui:// resource with that MIME type"),
    Rule("app-csp-malformed", "error",
         "An app's CSP lists only known keys (connectDomains, resourceDomains, frameDomains, baseUriDomains) "
         "holding origins.",
         "use Csp(connect_domains=['https://api.example.com'], ...)"),
    Rule("prompt-argument-description", "warning",
         "Every prompt argument has a description.",
         "annotate the parameter with Field(description=...)"),
    # generated tools
    Rule("openapi-skipped", "warning",
         "Every operation selected from an OpenAPI document became a tool (reported on the set's first tool).",
         "fix the document where the finding points, or leave the operation out of routes="),
    # suppressions
    Rule("lint-ignore-stale", "warning",
         "Every lint_ignore entry names a known rule and silences at least one finding.",
         "remove the entry or fix the rule id"),
)

RULES: dict[str, Rule] = {r.id: r for r in _CATALOG}
"""Every rule by id, in catalog order."""
