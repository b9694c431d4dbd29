"""A FastAPI service with its own REST routes and an MCP server mounted at ``/mcp``.

The REST routes and the MCP tools share one plain service object (``TodoList``), the way an
existing application grows an MCP interface: the tools are thin adapters over code that already
exists. The host app's lifespan runs the MCP app's, so its stores open at startup and close at
shutdown.

    mcpcore run examples.fastapi_app:app --port 8000     # or: uvicorn examples.fastapi_app:app --port 8000
    # REST: http://127.0.0.1:8000/todos      MCP: http://127.0.0.1:8000/mcp/  (mount points end in '/')
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from mcpcore import Context, ErrorContract, JsonRpcErrorCode, McpApp, tool

# -- the service both interfaces use ------------------------------------------------------------


class Todo(BaseModel):
    """One item of the list."""

    id: int = Field(description="Identifier of the todo")
    title: str = Field(description="What to do")
    done: bool = Field(default=False, description="Whether it is done")


class NewTodo(BaseModel):
    """The body of ``POST /todos`` and the input of the ``add_todo`` tool."""

    title: str = Field(min_length=1, max_length=200, description="What to do, e.g. 'water the plants'")


class TodoList:
    """An in-memory todo list, safe to use from concurrent requests."""

    def __init__(self) -> None:
        self._items: dict[int, Todo] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    async def add(self, title: str) -> Todo:
        async with self._lock:
            todo = Todo(id=next(self._ids), title=title)
            self._items[todo.id] = todo
            return todo

    async def all(self) -> list[Todo]:
        async with self._lock:
            return list(self._items.values())

    async def complete(self, todo_id: int) -> Todo | None:
        async with self._lock:
            todo = self._items.get(todo_id)
            if todo is not None:
                todo = self._items[todo_id] = todo.model_copy(update={"done": True})
            return todo


TODOS = TodoList()

# -- the MCP interface --------------------------------------------------------------------------


class TodoPage(BaseModel):
    todos: list[Todo] = Field(description="The todos, oldest first")
    open: int = Field(description="How many are not done yet")


@tool(annotations={"idempotent_hint": False})
async def add_todo(todo: NewTodo, ctx: Context) -> Todo:
    """Add a todo to the shared list and return it with its id."""
    created = await TODOS.add(todo.title)
    ctx.log.info("todo added", id=created.id)
    return created


@tool(annotations={"read_only_hint": True})
async def list_todos() -> TodoPage:
    """List every todo with how many are still open."""
    todos = await TODOS.all()
    return TodoPage(todos=todos, open=sum(not t.done for t in todos))


@tool(annotations={"idempotent_hint": True}, errors=[
    ErrorContract(reason="unknown_todo", code=JsonRpcErrorCode.NotFound, when="No todo has this id",
                  recovery="Call list_todos to see the ids that exist, then try again."),
])
async def complete_todo(
    todo_id: Annotated[int, Field(ge=1, description="Id of the todo to mark done, from list_todos")], ctx: Context
) -> Todo:
    """Mark a todo as done."""
    todo = await TODOS.complete(todo_id)
    if todo is None:
        raise ctx.fail("unknown_todo", f"No todo {todo_id}.")
    return todo


mcp = McpApp("todo-mcp", "1.0.0", tools=[add_todo, list_todos, complete_todo],
             instructions="A shared todo list; the same list is served over REST at /todos.")

# -- the host application -----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def lifespan(api: FastAPI) -> AsyncIterator[None]:
    """The host's own startup and shutdown, with the MCP app's inside (``lifespan=mcp.lifespan``
    alone is enough when the host has nothing of its own to start)."""
    async with mcp.lifespan():
        yield


app = FastAPI(title="Todo service", lifespan=lifespan)


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/todos")
async def get_todos() -> list[Todo]:
    return await TODOS.all()


@app.post("/todos", status_code=201)
async def post_todo(body: NewTodo) -> Todo:
    return await TODOS.add(body.title)


@app.post("/todos/{todo_id}/done")
async def mark_done(todo_id: int) -> Todo:
    todo = await TODOS.complete(todo_id)
    if todo is None:
        raise HTTPException(status_code=404, detail=f"No todo {todo_id}")
    return todo


app.mount("/mcp", mcp)
