"""A multi-tenant document server behind OAuth.

Every caller presents an access token from your authorization server. Its ``tid`` claim is the
tenant: ``ctx.state`` is scoped to it, so two tenants can both have a document called ``plan`` and
never see each other's. Scopes gate the tools: ``docs:read``, ``docs:write``, and ``docs:admin`` for
the tenant report. A token without ``tid`` can call nothing that touches documents (fail closed).

This server always runs with ``MCP_AUTH_MODE=oauth``. Configure it with:

    OAUTH_ISSUER_URL=https://auth.example.com   # required: tokens' iss
    OAUTH_AUDIENCE=docs-mcp                     # required: tokens' aud
    MCP_PUBLIC_URL=https://docs.example.com     # what the metadata and challenges name
    # optional: OAUTH_JWKS_URI, MCP_SERVER_RESOURCE_IDENTIFIER, and for several instances
    # MCP_SESSION_STORE=redis STORAGE_PROVIDER_TYPE=redis REDIS_URL=... MCP_STORAGE_CURSOR_KEY=...

    mcpcore run examples.multitenant:app --port 8000

Without ``OAUTH_ISSUER_URL`` or ``OAUTH_AUDIENCE`` it refuses to start, naming the variable.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from mcpcore import Context, ErrorContract, JsonRpcErrorCode, McpApp, Settings, tool

DocId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$",
                             description="Short lowercase id of the document, e.g. 'q3-plan'")]

DOC_ERRORS = [
    ErrorContract(reason="unknown_document", code=JsonRpcErrorCode.NotFound, when="No document has this id",
                  recovery="Call list_documents to see this tenant's ids, then try again."),
]


class Document(BaseModel):
    id: str = Field(description="Id of the document")
    title: str = Field(description="Title of the document")
    text: str = Field(description="Body of the document")
    author: str = Field(description="Subject (user) who last saved it")


class DocumentPage(BaseModel):
    ids: list[str] = Field(description="Ids of this tenant's documents on this page, in order")
    truncated: bool = Field(description="True when more documents follow this page")
    cursor: str | None = Field(default=None, description="Pass to list_documents for the next page")


class TenantReport(BaseModel):
    tenant: str = Field(description="The tenant this report covers")
    documents: int = Field(description="Number of documents the tenant holds")
    characters: int = Field(description="Total characters of text across them")


def _author(ctx: Context) -> str:
    return (ctx.auth.subject or ctx.auth.client_id) if ctx.auth else "anonymous"


@tool(auth=["docs:write"], annotations={"idempotent_hint": True})
async def save_document(
    doc_id: DocId,
    title: Annotated[str, Field(min_length=1, max_length=200, description="Title of the document")],
    text: Annotated[str, Field(max_length=100_000, description="Body of the document")],
    ctx: Context,
) -> Document:
    """Create or replace one of your tenant's documents."""
    doc = Document(id=doc_id, title=title, text=text, author=_author(ctx))
    await ctx.state.set(f"docs/{doc_id}", doc)
    ctx.log.info("document saved", docId=doc_id)
    return doc


@tool(auth=["docs:read"], annotations={"read_only_hint": True}, errors=DOC_ERRORS)
async def get_document(doc_id: DocId, ctx: Context) -> Document:
    """Read one of your tenant's documents."""
    doc = await ctx.state.get(f"docs/{doc_id}", Document)
    if doc is None:
        raise ctx.fail("unknown_document", f"No document {doc_id!r} in this tenant.")
    return doc


@tool(auth=["docs:read"], annotations={"read_only_hint": True})
async def list_documents(
    ctx: Context,
    cursor: Annotated[str | None, Field(description="The cursor of the previous page, if any")] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Most ids per page")] = 50,
) -> DocumentPage:
    """List your tenant's document ids a page at a time."""
    page = await ctx.state.list("docs/", cursor=cursor, limit=limit)
    return DocumentPage(ids=[item.key.removeprefix("docs/") for item in page.items],
                        truncated=page.cursor is not None, cursor=page.cursor)


@tool(auth=["docs:admin"], annotations={"read_only_hint": True})
async def tenant_report(ctx: Context) -> TenantReport:
    """Count your tenant's documents and their size (needs the docs:admin scope)."""
    documents = characters = 0
    cursor: str | None = None
    while True:
        page = await ctx.state.list("docs/", cursor=cursor, limit=500)
        for item in page.items:
            documents += 1
            characters += len(Document.model_validate(item.value).text)
        if page.cursor is None:
            break
        cursor = page.cursor
    return TenantReport(tenant=ctx.tenant_id or "", documents=documents, characters=characters)


app = McpApp(
    "tenant-docs",
    "1.0.0",
    tools=[save_document, get_document, list_documents, tenant_report],
    settings=Settings.from_env(auth_mode="oauth"),
    instructions="Documents private to the caller's tenant. Ids are short lowercase slugs.",
)
