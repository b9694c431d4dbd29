"""A FastAPI app whose routes an mcpcore server (mounted at ``/mcp``) serves as tools, called in
process: path, query and body parameters, a self-referencing Pydantic model, a form, a route
guarded by ``Depends(current_user)`` (a bearer JWT for this API's audience), a streaming route,
a file download, an error, and a route whose real answers depart from its declared schema.

``build()`` makes a fresh pair; ``app`` is one for ``mcpcore run tests.apps.openapi_fastapi:app``
(its auth mode from the environment, ``MCP_AUTH_MODE=jwt`` with ``MCP_AUTH_SECRET_KEY=SECRET``
for the guarded route)."""

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Literal

import jwt
from fastapi import Depends, FastAPI, Form, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from mcpcore import McpApp, Settings
from mcpcore.credentials import CallerToken, CredentialPolicy
from mcpcore.openapi import OpenApiTools

SECRET = "openapi-test-secret-of-thirty-two-bytes"
AUDIENCE = "https://shop.example"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + bytes(range(256)) * 4
TOOLS = ["get_item", "list_items", "create_item", "get_category", "put_category", "login", "me", "stream_lines",
         "download", "reserve", "drifting"]


class Owner(BaseModel):
    name: str
    email: str | None = None


class Item(BaseModel):
    """Something the shop sells."""

    name: str = Field(description="What it is called")
    price: float = Field(ge=0)
    tags: list[str] = []
    owner: Owner | None = None


class StoredItem(Item):
    id: int


class Category(BaseModel):
    """A category and its subcategories: a model that refers to itself."""

    name: str
    children: list["Category"] = []


class Declared(BaseModel):
    """What /drifting says it answers; it answers more, less and other."""

    id: int
    status: Literal["active", "retired"]
    label: str


def build(settings: Settings | None = None, credentials: CredentialPolicy | None = None,
          ) -> "tuple[FastAPI, McpApp, OpenApiTools]":
    """The API, the mcpcore app mounted in it, and the tools built from the API's routes (all but
    ``me``, which is built apart with ``credentials``)."""
    mcp = McpApp("shop", "1.0.0", settings=settings)
    api = FastAPI(title="Shop", lifespan=mcp.lifespan)
    items: dict[int, StoredItem] = {1: StoredItem(id=1, name="lamp", price=12.5, tags=["home"],
                                                  owner=Owner(name="ann"))}
    streamed: dict[str, int] = {"started": 0, "finished": 0}
    api.state.streamed = streamed

    def current_user(authorization: Annotated[str | None, Header()] = None) -> str:
        token = (authorization or "").removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience=AUDIENCE)
        except jwt.PyJWTError:
            raise HTTPException(status_code=401, detail="sign in with a token for this API") from None
        return str(claims["sub"])

    @api.get("/items/{item_id}", summary="One item", tags=["items"])
    async def get_item(item_id: int, detail: bool = False) -> StoredItem:
        """An item by its id; ``detail`` adds its owner."""
        found = items.get(item_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no item {item_id}")
        return found if detail else found.model_copy(update={"owner": None})

    @api.get("/items", summary="Items, by tag", tags=["items"])
    async def list_items(tag: str | None = None, limit: Annotated[int, Query(ge=1, le=50)] = 10) -> list[StoredItem]:
        return [i for i in items.values() if tag is None or tag in i.tags][:limit]

    @api.post("/items", status_code=201, summary="Add an item", tags=["items"])
    async def create_item(item: Item, dry_run: bool = False) -> StoredItem:
        stored = StoredItem(id=max(items) + 1, **item.model_dump())
        if not dry_run:
            items[stored.id] = stored
        return stored

    @api.get("/categories/{name}", summary="A category tree")
    async def get_category(name: str, depth: int = 2) -> Category:
        def tree(level: int, label: str) -> Category:
            return Category(name=label, children=[tree(level - 1, f"{label}/{i}") for i in range(2)] if level else [])
        return tree(depth, name)

    @api.put("/categories", summary="Replace a category tree")
    async def put_category(category: Category) -> Category:
        return category

    @api.post("/login", summary="Sign in with a form")
    async def login(username: Annotated[str, Form()], password: Annotated[str, Form()]) -> dict[str, str]:
        if password != "open sesame":
            raise HTTPException(status_code=401, detail="wrong password")
        return {"user": username}

    @api.get("/me", summary="Who the API thinks is calling")
    async def me(user: Annotated[str, Depends(current_user)]) -> dict[str, str]:
        return {"user": user}

    @api.get("/stream", summary="Lines, streamed", response_class=StreamingResponse)
    async def stream_lines(lines: int = 10) -> StreamingResponse:
        async def produce() -> AsyncIterator[bytes]:
            streamed["started"] += 1
            for i in range(lines):
                yield f"line {i:06d} {'x' * 40}\n".encode()
                if i % 100 == 0:
                    await asyncio.sleep(0)
            streamed["finished"] += 1

        return StreamingResponse(produce(), media_type="text/plain")

    @api.get("/files/{name}", summary="Download a file", response_class=Response,
             responses={200: {"content": {"image/png": {}}}})
    async def download(name: str, size: int = 1) -> Response:
        return Response(PNG * size, media_type="image/png", headers={"content-disposition": f"attachment; "
                                                                                            f"filename={name}"})

    @api.post("/items/{item_id}/reserve", summary="Reserve an item")
    async def reserve(item_id: int, request: Request) -> dict[str, int]:
        raise HTTPException(status_code=409, detail={"error": "already_reserved", "item": item_id})

    @api.get("/drifting/{item_id}", summary="An answer that departs from its schema",
             responses={200: {"model": Declared}})
    async def drifting(item_id: int) -> JSONResponse:
        # extra fields, a "required" one left out, an enum value the description never listed
        return JSONResponse({"id": item_id, "status": "archived", "color": "red", "nested": {"deep": [1, 2]}})

    tools = mcp.include_fastapi(api, routes=[t for t in TOOLS if t != "me"])
    # only the guarded route gets the caller's token (credentials=: CallerToken by default)
    mcp.include_fastapi(api, routes=["me"], credentials=credentials or CallerToken(AUDIENCE))
    api.mount("/mcp", mcp)
    return api, mcp, tools


app, mcp, tools = build()


class Count(BaseModel):
    count: int


def miscounting_api() -> FastAPI:
    """An API whose one route answers a string where its schema says an integer."""
    api = FastAPI(title="Miscounting")

    @api.get("/count", responses={200: {"model": Count}})
    async def count() -> JSONResponse:
        return JSONResponse({"count": "many"})

    return api
