"""Published OpenAPI documents (installed from npm by tests/tools/ensure_node.py, group ``openapi``)
served as tools: ``petstore`` (the Petstore 3.0 example), ``petstore31`` (its 3.1 form) and
``github`` (GitHub's full REST description, every operation). Their APIs are never called here:
each server is for listing, and for the Inspector's portability check of the schemas."""

from __future__ import annotations

from pathlib import Path

import httpx

from mcpcore import McpApp, Settings
from mcpcore.openapi import ALL, OpenApiTools, openapi_tools
from tests.tools import ensure_node


def spec(name: str) -> Path:
    """A published document by short name: ``petstore``, ``petstore31``, ``github`` or any
    ``@readme/oas-examples`` 3.0 example's file stem (``circular``, ``parameters-cookies``...)."""
    modules = ensure_node.ensure("openapi")
    if name == "github":
        return modules / "@octokit" / "openapi" / "generated" / "api.github.com.json"
    if name == "petstore31":
        return modules / "@readme" / "oas-examples" / "3.1" / "json" / "petstore.json"
    return modules / "@readme" / "oas-examples" / "3.0" / "json" / f"{name}.json"


def tools_of(name: str, base_url: str = "https://api.example") -> OpenApiTools:
    """Every operation of the document ``name`` as tools, for a client that is never used."""
    return openapi_tools(spec(name), client=httpx.AsyncClient(base_url=base_url), routes=ALL)


def example_documents() -> list[Path]:
    """Every OpenAPI 3.0 and 3.1 document of ``@readme/oas-examples``."""
    root = ensure_node.ensure("openapi") / "@readme" / "oas-examples"
    return sorted([*root.glob("3.0/json/*.json"), *root.glob("3.1/json/*.json")])


def _app(name: str) -> McpApp:
    if name == "examples":
        tools = [t for path in example_documents() for t in openapi_tools(
            path, client=httpx.AsyncClient(base_url="https://api.example"), routes=ALL,
            prefix=f"v{path.parts[-3].replace('.', '')}_{path.stem.replace('-', '_')[:20]}_")]
        return McpApp(name, tools=tools, settings=Settings.from_env({}))
    return McpApp(name, tools=tools_of(name), settings=Settings.from_env({}))


def __getattr__(name: str) -> McpApp:  # ``mcpcore run tests.apps.openapi_specs:github`` builds on demand
    if name in ("petstore", "petstore31", "github", "examples"):
        return _app(name)
    raise AttributeError(name)
