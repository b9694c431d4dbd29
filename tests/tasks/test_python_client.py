"""2025-11-25 tasks driven by the official `mcp` Python client (2.x) against the example
server (a real uvicorn): a task-augmented ``tools/call``, polled with ``tasks/get``, its input
asked on the ``tasks/result`` stream, its result read with ``tasks/result``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, types

from tests.servers import run_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with run_server() as url:
        yield url


async def _confirm(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"confirm": True})


async def _create(client: Client, name: str, arguments: dict[str, Any]) -> types.CreateTaskResult:
    """The SDK's typed request; its answer read through the session's dispatcher and validated
    as the SDK's ``CreateTaskResult``: ``send_request`` checks every ``tools/call`` answer of a
    2025-11-25 session against ``CallToolResult`` alone (the SDK has no tasks yet, python-sdk #2806)."""
    request = types.CallToolRequest(params=types.CallToolRequestParams(
        name=name, arguments=arguments, task=types.TaskMetadata(ttl=60_000)))
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    session = client.session
    raw = await session._dispatcher.send_raw_request(
        "tools/call", data["params"], {"headers": {"mcp-protocol-version": session.protocol_version or ""}})
    return types.CreateTaskResult.model_validate(raw, by_name=False)


async def _get(client: Client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def _result(client: Client, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CallToolResult)


async def test_a_task_augmented_call_to_its_result(server_url: str) -> None:
    async with Client(server_url, mode="legacy") as client:
        caps = client.session.server_capabilities
        assert caps is not None and caps.tasks is not None and caps.tasks.requests is not None
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["slow_compute"].execution is not None
        assert tools["slow_compute"].execution.task_support == "optional"
        created = await _create(client, "slow_compute", {"seconds": 0.5, "label": "py"})
        assert created.task.status == "working" and created.task.ttl == 60_000
        polled = await _get(client, created.task.task_id)
        assert polled.task_id == created.task.task_id and polled.status in ("working", "completed")
        result = await _result(client, created.task.task_id)  # blocks until the task ends
        assert result.content[0].text == "Computed py in 0.5s"  # type: ignore[union-attr]
        assert (await _get(client, created.task.task_id)).status == "completed"


async def test_input_asked_on_the_result_stream(server_url: str) -> None:
    async with Client(server_url, mode="legacy", elicitation_callback=_confirm) as client:
        created = await _create(client, "confirm_delete", {"filename": "draft.txt"})
        for _ in range(50):
            if (await _get(client, created.task.task_id)).status == "input_required":
                break
            await asyncio.sleep(0.1)
        result = await _result(client, created.task.task_id)
        assert result.content[0].text == "Deleted draft.txt"  # type: ignore[union-attr]


async def test_list_and_cancel(server_url: str) -> None:
    async with Client(server_url, mode="legacy") as client:
        created = await _create(client, "slow_compute", {"seconds": 60})
        listed = await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert created.task.task_id in {t.task_id for t in listed.tasks}
        cancelled = await client.session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=created.task.task_id)),
            types.CancelTaskResult)
        assert cancelled.status == "cancelled"
        with pytest.raises(Exception, match="already cancelled"):
            await client.session.send_request(
                types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=created.task.task_id)),
                types.CancelTaskResult)
