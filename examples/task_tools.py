"""Tools that run as tasks (docs/tasks.md), with the names the conformance suite's tasks
scenarios call: included by examples/everything.py."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from mcpcore import Context, ErrorContract, JsonRpcErrorCode, TaskSupport, input_required, tool


class Confirm(BaseModel):
    confirm: bool = Field(description="Whether to go ahead")


class NameAnswer(BaseModel):
    name: str = Field(description="Your name")


@tool(annotations={"read_only_hint": True})
def greet(name: Annotated[str, Field(description="Who to greet, e.g. 'World'")]) -> str:
    """Greet someone at once (an ordinary tool: never a task)."""
    return f"Hello, {name}!"


@tool(task=TaskSupport("optional", rerun=True), annotations={"read_only_hint": True, "idempotent_hint": True})
async def slow_compute(
    seconds: Annotated[float, Field(ge=0, le=3600, description="How long the computation takes, e.g. 2")],
    ctx: Context,
    label: Annotated[str, Field(description="A label echoed in the result, e.g. 'nightly'")] = "",
) -> str:
    """Compute for `seconds` seconds, then report; as a task when the client takes tasks.
    Safe to run again, so a task whose instance dies is run again on another one."""
    step = 0.25
    waited = 0.0
    while waited < seconds:
        await asyncio.sleep(min(step, seconds - waited))
        waited += step
        await ctx.report_progress(min(waited, seconds), seconds, f"computing ({min(waited, seconds):.1f}s)")
    return f"Computed {label or 'result'} in {seconds:g}s"


JOB_ERRORS = [ErrorContract("job_failed", JsonRpcErrorCode.InternalError, "The job ran and failed",
                            "Run the job again later; it fails every time by design.")]


@tool(task="required", errors=JOB_ERRORS)
async def failing_job(ctx: Context) -> str:
    """A job that always fails after about a second, reporting a tool error (runs only as a task)."""
    await asyncio.sleep(1)
    raise ctx.fail("job_failed", "The job failed after running for a second.")


@tool(task="optional")
async def protocol_error_job() -> str:
    """A job that crashes (an unexpected exception): its task ends failed, with the error."""
    await asyncio.sleep(0.2)
    raise RuntimeError("the job's worker crashed")


@tool(task="optional", annotations={"destructive_hint": True})
async def confirm_delete(
    filename: Annotated[str, Field(description="The file to delete, e.g. 'old.txt'")], ctx: Context,
) -> str:
    """Ask the user to confirm, then report the deletion (a fixture: no file is touched)."""
    answer = ctx.inputs.accepted("confirm", Confirm)
    if answer is None:
        return ctx.request_input({"confirm": input_required.elicit(f"Delete {filename}?", Confirm)})
    return f"Deleted {filename}" if answer.confirm else f"Kept {filename}"


@tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Ask two questions at once (a name and a confirmation), then combine the answers."""
    name = ctx.inputs.accepted("name", NameAnswer)
    confirm = ctx.inputs.accepted("confirm", Confirm)
    if name is None or confirm is None:
        return ctx.request_input({
            "name": input_required.elicit("What is your name?", NameAnswer),
            "confirm": input_required.elicit("Go ahead?", Confirm),
        })
    return f"{name.name}: {'confirmed' if confirm.confirm else 'not confirmed'}"


@tool(task="optional")
async def awaited_booking(ctx: Context) -> str:
    """Ask who the booking is for and whether to go ahead, each awaited (as a task when the client
    takes tasks: the task waits in input_required for each answer)."""
    name = await ctx.elicit("Who is the booking for?", NameAnswer)
    if name.data is None:
        return "No booking: no name given"
    go = await ctx.elicit(f"Book a room for {name.data.name}?", Confirm)
    return f"Booked for {name.data.name}" if go.data is not None and go.data.confirm else "Not booked"


@tool(task=TaskSupport("required", start="handler"))
async def test_tool_with_task(ctx: Context) -> str:
    """Ask for the user's name on the call itself, then go on as a task that greets them."""
    answer = ctx.inputs.accepted("user_name", NameAnswer)
    if answer is None:
        return ctx.request_input({"user_name": input_required.elicit("What is your name?", NameAnswer)})
    await ctx.start_task("Preparing the greeting")
    await asyncio.sleep(0.5)
    return f"Hello, {answer.name}!"
