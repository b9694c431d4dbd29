"""Existing HTTP APIs as tools: an OpenAPI 3 document, or a FastAPI app, in process or remote.

    from mcpcore.openapi import openapi_tools, READ_ONLY

    app = McpApp("petstore", tools=openapi_tools("petstore.yaml", client=httpx.AsyncClient(
        base_url="https://petstore.example"), routes=["listPets", "GET /pets/{petId}"]))

    app.include_fastapi(api, routes=READ_ONLY)        # a FastAPI app's routes, called in process

See docs/openapi.md. The pieces: :mod:`.select` (which operations, names, descriptions),
:mod:`.refs` (documents and ``$ref``), :mod:`.schema` (OpenAPI schemas as JSON Schema),
:mod:`.params` (the input schema and where each argument goes), :mod:`.call` (requests, the
in-process transport), :mod:`.results` (responses as results), :mod:`.validate` (field paths),
:mod:`.fastapi` (a FastAPI app's document and names).
"""

from .build import OpenApiTools, Skipped, openapi_tools
from .fastapi import fastapi_tools
from .results import Bounds
from .select import ALL, READ_ONLY, Route

__all__ = ["ALL", "READ_ONLY", "Bounds", "OpenApiTools", "Route", "Skipped", "fastapi_tools", "openapi_tools"]
