"""``await ctx.elicit / ctx.sample / ctx.list_roots``: one handler, both eras, tasks, stdio.

On a 2025 session the ask is a request to the client and the handler runs once; on 2026-07-28
(and in a task) each unanswered ask is an ``input_required`` round and the handler runs again
from the top, the n-th ask getting the n-th answer.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pydantic import BaseModel

from mcpcore import Context, Elicited, McpApp, McpError, Settings, input_required, tool
from mcpcore.client import Client, task_of
from mcpcore.testing import McpTestClient, create_mock_context, expect_input_required, tool_error

from .conftest import example_app
from .servers import ROOT

pytestmark = pytest.mark.anyio
CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    props = params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {k: True if v.get("type") == "boolean" else "Ada" for k, v in props.items()}}


HANDLERS: dict[str, Any] = {
    "elicitation/create": _elicit,
    "sampling/createMessage": lambda p: {"role": "assistant", "content": {"type": "text", "text": "Paris"},
                                         "model": "test-model"},
    "roots/list": lambda p: {"roots": [{"uri": "file:///home/ada", "name": "home"}]},
}


class Name(BaseModel):
    name: str


def counting_app(runs: list[str], **settings: Any) -> McpApp:
    @tool
    async def book(ctx: Context) -> str:
        """Ask twice, counting the runs."""
        runs.append("run")
        who = await ctx.elicit("Who?", Name)
        sure = await ctx.elicit("Sure?", bool)
        return f"{who.data.name if who.data else '-'} {sure.data}"

    return McpApp("asks", "1.0.0", tools=[book], settings=Settings.from_env({}, **settings))


# -- the two eras -----------------------------------------------------------------------------------

async def test_a_2025_session_asks_the_client_and_the_handler_runs_once() -> None:
    runs: list[str] = []
    asked: list[str] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return _elicit(params)

    async with McpTestClient(counting_app(runs), capabilities=CAPS, handlers={"elicitation/create": answer}) as c:
        r = await c.call_tool("book")
    assert r["content"][0]["text"] == "Ada True"
    assert runs == ["run"] and asked == ["Who?", "Sure?"]


async def test_2026_rounds_key_the_answers_by_order_and_rerun_the_handler() -> None:
    runs: list[str] = []
    async with McpTestClient(counting_app(runs), era="modern", capabilities=CAPS) as c:
        first = await c.call_tool("book")
        assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["elicit#1"]
        one = {"elicit#1": {"action": "accept", "content": {"name": "Ada"}}}
        second = await c.call_tool("book", inputResponses=one, requestState=first.get("requestState"))
        assert list(second["inputRequests"]) == ["elicit#2"]
        assert second["inputRequests"]["elicit#2"]["params"]["requestedSchema"]["properties"]["value"]["type"] == \
            "boolean"
        # The retry carries only the latest answer: the first one travels in requestState.
        two = {"elicit#2": {"action": "accept", "content": {"value": False}}}
        done = await c.call_tool("book", inputResponses=two, requestState=second["requestState"])
    assert done["content"][0]["text"] == "Ada False"
    assert runs == ["run"] * 3


async def test_the_client_answers_every_kind_in_both_eras_with_one_handler() -> None:
    app = example_app()
    async with app.lifespan():
        for era in ("legacy", "modern"):
            async with Client(app, era=era, handlers=HANDLERS) as client:
                r = await client.call_tool("test_awaited_questions")
                assert r["content"][0]["text"] == "Paris Ada (1 roots)", era


async def test_a_decline_is_an_answer_and_bad_content_is_a_tool_error() -> None:
    async with Client(example_app(), era="modern", on_elicit=lambda p: {"action": "decline"},
                      handlers={k: v for k, v in HANDLERS.items() if k != "elicitation/create"}) as client:
        r = await client.call_tool("test_awaited_questions")
        assert r["content"][0]["text"] == "Paris nobody (1 roots)"
    async with McpTestClient(example_app(), era="modern", capabilities=CAPS) as c:
        bad = {"elicit#1": {"action": "accept", "content": {"nom": "Ada"}}}
        r = await c.call_tool("test_awaited_questions", inputResponses=bad)
    assert r["isError"] and tool_error(r)["data"]["reason"] == "invalid_elicitation_answer"
    assert "does not match it: name: Field required" in r["content"][0]["text"]


async def test_a_client_that_cannot_answer_is_refused_in_each_era() -> None:
    async with McpTestClient(example_app()) as c:
        r = await c.call_tool("test_awaited_questions")
        assert r["isError"] and tool_error(r)["data"]["reason"] == "client_capability_missing"
    async with McpTestClient(example_app(), era="modern") as c:
        with pytest.raises(McpError) as info:
            await c.call_tool("test_awaited_questions")
    assert info.value.code == -32021 and info.value.data["requiredCapabilities"] == {"elicitation": {"form": {}}}


async def test_the_answers_in_request_state_are_sealed_with_a_key() -> None:
    runs: list[str] = []
    async with McpTestClient(counting_app(runs, request_state_key="k" * 40), era="modern", capabilities=CAPS) as c:
        one = {"elicit#1": {"action": "accept", "content": {"name": "Ada"}}}
        second = await c.call_tool("book", inputResponses=one)
        sealed = second["requestState"]
        assert "." in sealed and not sealed.startswith("mcpcore.asks.")
        with pytest.raises(McpError) as info:  # a forged answer in the state never reaches the handler
            await c.call_tool("book", inputResponses={"elicit#2": {"action": "accept", "content": {"value": True}}},
                              requestState=sealed[:-2] + ("AA" if not sealed.endswith("AA") else "BB"))
        assert info.value.data["reason"] == "invalid_request_state"


# -- mixed with ctx.request_input, and unit tests ---------------------------------------------------

def mixed_app() -> McpApp:
    @tool
    async def mixed(ctx: Context) -> str:
        """Await a name, then ask for a colour the low-level way, keeping state."""
        who = await ctx.elicit("Who?", Name)
        colour = ctx.inputs.accepted("colour", Name)
        if colour is None or ctx.inputs.state() != "mine":
            return ctx.request_input({"colour": input_required.elicit("Colour?", Name)}, request_state="mine")
        return f"{who.data.name if who.data else '-'} likes {colour.name}"

    return McpApp("mixed", "1.0.0", tools=[mixed], settings=Settings.from_env({}))


async def test_awaited_asks_and_request_input_mix_in_both_eras() -> None:
    asked: list[str] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada" if params["message"] == "Who?" else "red"}}

    async with McpTestClient(mixed_app(), capabilities=CAPS, handlers={"elicitation/create": answer}) as c:
        r = await c.call_tool("mixed")
    assert r["content"][0]["text"] == "Ada likes red" and asked == ["Who?", "Colour?"]  # "Who?" asked once
    asked.clear()
    async with Client(mixed_app(), era="modern", on_elicit=answer) as client:
        r = await client.call_tool("mixed")
    assert r["content"][0]["text"] == "Ada likes red" and asked == ["Who?", "Colour?"]


async def test_mock_contexts_see_the_question_and_seed_the_answers() -> None:
    async def handler(ctx: Context) -> str:
        answer: Elicited[Name] = await ctx.elicit("Who?", Name)
        return answer.data.name if answer.data else "-"

    spec = await expect_input_required(handler(create_mock_context()))
    assert list(spec.input_requests) == ["elicit#1"]
    assert spec.input_requests["elicit#1"].params["message"] == "Who?"
    seeded = create_mock_context(input_responses={"elicit#1": {"action": "accept", "content": {"name": "Ada"}}})
    assert await handler(seeded) == "Ada"


# -- tasks ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_inside_a_task_each_await_is_a_round_of_the_task(era: str) -> None:
    import examples.task_tools

    app = example_app()
    app.include(examples.task_tools)
    statuses: list[str] = []
    async with Client(app, era=era, handlers=HANDLERS) as client:
        created = await client.call_tool("awaited_booking", task=True)
        task = task_of(created)
        assert task is not None and task["status"] == "working"
        result = await client.wait_task(task["taskId"], on_status=lambda t: statuses.append(t["status"]), poll=0.05)
    assert result["content"][0]["text"] == "Booked for Ada"
    if era == "modern":
        assert "input_required" in statuses and statuses[-1] == "completed"


# -- stdio ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_over_stdio_in_each_era(era: str) -> None:
    command = [sys.executable, "-m", "mcpcore", "run", "examples.everything:app", "--transport", "stdio"]
    async with Client(command, cwd=str(ROOT), era=era, handlers=HANDLERS) as client:
        assert client.era == era
        r = await client.call_tool("test_awaited_questions")
    assert r["content"][0]["text"] == "Paris Ada (1 roots)"
