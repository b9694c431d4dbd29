"""ctx.request_input / ctx.inputs on both eras, builders, sealing, refusals, consent gates."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from mcpcore import Context, McpApp, McpError, Settings, input_required, resource, tool
from mcpcore.context.inputs import ContextInputs
from mcpcore.security.sealing import RequestStateSealer
from mcpcore.testing import McpTestClient, create_mock_context, expect_input_required, tool_error

from .conftest import example_app

pytestmark = pytest.mark.anyio
KEY = "k" * 40
ACCEPT_NAME = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}


def keyed_app(**settings: Any) -> McpApp:
    return example_app(request_state_key=KEY, **settings)


# -- builders -------------------------------------------------------------------------------------

def test_elicit_turns_a_model_into_the_restricted_schema() -> None:
    class Form(BaseModel):
        name: str = Field(default="John Doe", description="Your name", min_length=1)
        age: int = 30
        score: float = 95.5
        status: Literal["active", "inactive"] = "active"
        tags: list[Literal["a", "b"]] = Field(default_factory=list, max_length=2)
        email: str | None = Field(default=None, json_schema_extra={"format": "email"})
        ok: bool

    req = input_required.elicit("Fill it in", Form)
    assert req.method == "elicitation/create" and "mode" not in req.params
    props = req.params["requestedSchema"]["properties"]
    assert props["name"] == {"type": "string", "default": "John Doe", "description": "Your name", "minLength": 1}
    assert props["age"] == {"type": "integer", "default": 30}
    assert props["status"] == {"type": "string", "enum": ["active", "inactive"], "default": "active"}
    assert props["tags"]["items"] == {"type": "string", "enum": ["a", "b"]} and props["tags"]["maxItems"] == 2
    assert props["email"] == {"type": "string", "format": "email"}
    assert req.params["requestedSchema"]["required"] == ["ok"]


@pytest.mark.parametrize("field_type", ["nested", "union", "list_of_str", "bad_format"])
def test_shapes_elicitation_cannot_express_raise_type_error(field_type: str) -> None:
    class Inner(BaseModel):
        x: int

    fields: dict[str, Any] = {
        "nested": (Inner, ...), "union": (int | str, ...), "list_of_str": (list[str], ...),
        "bad_format": (str, Field(json_schema_extra={"format": "ipv4"})),
    }
    from pydantic import create_model

    model = create_model("M", value=fields[field_type])
    with pytest.raises(TypeError):
        input_required.elicit("x", model)


def test_spec_needs_requests_or_state_and_other_builders() -> None:
    with pytest.raises(TypeError):
        input_required()
    with pytest.raises(TypeError):
        input_required.elicit_url("Sign in", "ftp://x")
    assert input_required(request_state="s").request_state == "s"
    url = input_required.elicit_url("Sign in", "https://auth.example.com/start")
    assert url.params == {"mode": "url", "message": "Sign in", "url": "https://auth.example.com/start"}
    msg = input_required.create_message(["hi", {"role": "assistant", "content": {"type": "text", "text": "yo"}}],
                                        max_tokens=5, system_prompt="be brief", tools=[{"name": "t"}])
    assert msg.params["messages"][0] == {"role": "user", "content": {"type": "text", "text": "hi"}}
    assert msg.params["maxTokens"] == 5 and msg.params["systemPrompt"] == "be brief" and msg.params["tools"]
    assert input_required.list_roots().to_wire() == {"method": "roots/list", "params": {}}


# -- ctx.inputs filtering -------------------------------------------------------------------------

FORM = {"action": "accept", "content": {"x": 1}}
DECLINE = {"action": "decline"}
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
TOOL_SAMPLE = {"role": "assistant", "model": "m",
               "content": [{"type": "tool_use", "id": "1", "name": "t", "input": {}}]}
ROOTS = {"roots": [{"uri": "file:///a"}]}


@pytest.mark.parametrize("caps,kept", [
    ({"elicitation": {}}, {"form", "decline"}),
    ({"elicitation": {"form": {}}}, {"form", "decline"}),
    ({"elicitation": {"url": {}}}, {"decline"}),
    ({"sampling": {}}, {"sample"}),
    ({"sampling": {"tools": {}}}, {"sample", "tool_sample"}),
    ({"roots": {}}, {"roots"}),
    ({}, set()),
    (None, set()),
])
def test_inputs_keep_only_what_the_capabilities_cover(caps: dict[str, Any] | None, kept: set[str]) -> None:
    raw = {"form": FORM, "decline": DECLINE, "sample": SAMPLE, "tool_sample": TOOL_SAMPLE, "roots": ROOTS,
           "junk": {"what": 1}, "wrapped": {"result": FORM}}
    inputs = ContextInputs(raw, caps, None)
    assert set(inputs.responses) == kept
    assert inputs.dropped == ([] if caps is None else ["wrapped"])


def test_accepted_and_view_collapse_and_distinguish_outcomes() -> None:
    class X(BaseModel):
        x: int

    class Y(BaseModel):
        y: str

    inputs = ContextInputs({"form": FORM, "no": DECLINE, "s": SAMPLE, "r": ROOTS}, {"elicitation": {}, "sampling": {},
                                                                                    "roots": {}}, "st")
    assert inputs.accepted("form") == {"x": 1} and inputs.accepted("form", X) == X(x=1)
    assert inputs.accepted("form", Y) is None and inputs.accepted("no") is None and inputs.accepted("missing") is None
    assert inputs.view("no").kind == "elicit" and inputs.view("no").action == "decline"  # type: ignore[union-attr]
    assert inputs.view("s").kind == "sampling" and inputs.view("r").roots == [{"uri": "file:///a"}]  # type: ignore
    assert inputs.view("missing").kind == "missing" and inputs.state() == "st"


async def test_mock_context_drives_a_handler_into_its_second_round() -> None:
    from examples.everything import test_input_required_result_elicitation as handler

    asked = await expect_input_required(lambda: handler(create_mock_context()))
    assert list(asked.input_requests) == ["user_name"]
    ctx = create_mock_context(input_responses=ACCEPT_NAME)
    assert handler(ctx) == "Hello, Ada!"
    refused = create_mock_context(input_responses=ACCEPT_NAME, client_capabilities={})
    with pytest.raises(McpError) as e:
        handler(refused)
    assert e.value.data["reason"] == "client_capability_missing"
    with pytest.raises(AssertionError):
        await expect_input_required(lambda: handler(ctx))


# -- 2026-07-28 -----------------------------------------------------------------------------------

async def test_modern_input_required_result_and_retry() -> None:
    async with McpTestClient(keyed_app(), era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("test_input_required_result_elicitation")
        assert r["resultType"] == "input_required" and "ttlMs" not in r
        assert r["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert r["inputRequests"]["user_name"]["params"]["requestedSchema"]["required"] == ["name"]
        assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpcore-everything"
        r = await c.call_tool("test_input_required_result_elicitation", inputResponses=ACCEPT_NAME)
        assert r["resultType"] == "complete" and r["content"][0]["text"] == "Hello, Ada!"
        r = await c.call_tool("test_input_required_result_elicitation", inputResponses={"wrong": FORM})
        assert r["resultType"] == "input_required"


async def test_modern_missing_capability_is_32021_with_http_400() -> None:
    async with McpTestClient(keyed_app(), era="modern", capabilities={"sampling": {}}) as c:
        with pytest.raises(McpError) as e:
            await c.call_tool("test_input_required_result_elicitation")
        assert e.value.code == -32021 and e.value.http_status == 400  # type: ignore[attr-defined]
        assert e.value.data["requiredCapabilities"] == {"elicitation": {"form": {}}}


async def test_sealed_state_round_trips_and_tampering_is_refused() -> None:
    async with McpTestClient(keyed_app(), era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("test_input_required_result_request_state")
        sealed = r["requestState"]
        assert sealed != "confirm-round-1" and "." in sealed
        ok = {"confirm": {"action": "accept", "content": {"ok": True}}}
        r = await c.call_tool("test_input_required_result_request_state", inputResponses=ok, requestState=sealed)
        assert "state-ok" in r["content"][0]["text"]
        body, mac = sealed.split(".")
        for forged in (sealed[:-2] + ("AA" if not sealed.endswith("AA") else "BB"), "confirm-round-1",
                       body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac, ""):
            with pytest.raises(McpError) as e:
                await c.call_tool("test_input_required_result_request_state", inputResponses=ok, requestState=forged)
            assert e.value.code == -32602 and e.value.data["reason"] == "invalid_request_state"
        with pytest.raises(McpError) as e:  # minted for another tool
            await c.call_tool("test_input_required_result_tampered_state", inputResponses=ok, requestState=sealed)
        assert e.value.data["reason"] == "invalid_request_state"


def test_sealer_rejects_expired_other_principal_and_other_key() -> None:
    now = [1000.0]
    sealer = RequestStateSealer([b"a" * 32], clock=lambda: now[0])
    who = {"operation": "tool:x", "client_id": "c", "subject": "s", "tenant": "t"}
    token = sealer.seal("state", **who)
    assert sealer.unseal(token, **who) == "state"
    for other in ({**who, "client_id": "c2"}, {**who, "subject": "s2"}, {**who, "tenant": "t2"},
                  {**who, "operation": "tool:y"}):
        with pytest.raises(McpError, match="another"):
            sealer.unseal(token, **other)
    with pytest.raises(McpError, match="signature"):
        RequestStateSealer([b"b" * 32]).unseal(token, **who)
    rotated = RequestStateSealer([b"b" * 32, b"a" * 32], clock=lambda: now[0])
    assert rotated.unseal(token, **who) == "state"
    now[0] += 901
    with pytest.raises(McpError, match="expired"):
        sealer.unseal(token, **who)
    from mcpcore import ConfigurationError

    with pytest.raises(ConfigurationError, match="32 bytes"):
        RequestStateSealer.from_setting("short")


async def test_without_a_key_state_passes_raw_and_startup_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpcore.app"):
        app = example_app()
        await app.startup()
        await app.shutdown()
    assert any("MCP_REQUEST_STATE_KEY is unset" in r.message for r in caplog.records)
    async with McpTestClient(example_app(), era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("test_input_required_result_request_state")
        assert r["requestState"] == "confirm-round-1"


async def test_prompt_and_resource_reads_can_ask_too() -> None:
    @resource("secret://{name}")
    def secret(name: str, ctx: Context) -> str:
        ok = ctx.inputs.accepted("pin")
        if ok is None:
            return ctx.request_input({"pin": input_required.elicit("PIN?", {"type": "object", "properties": {
                "pin": {"type": "string"}}})}, fallback_hint="Or read a public resource.")
        return f"{name}:{ok['pin']}"

    app = McpApp("t", "1", resources=[secret], settings=Settings.from_env({}, request_state_key=KEY))
    async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.read_resource("secret://x")
        assert r["resultType"] == "input_required" and "ttlMs" not in r
        r = await c.request("resources/read", {"uri": "secret://x", "inputResponses": {
            "pin": {"action": "accept", "content": {"pin": "1234"}}}})
        assert r["contents"][0]["text"] == "x:1234"
    async with McpTestClient(app, capabilities={}) as c:  # 2025 session without elicitation
        with pytest.raises(McpError) as e:
            await c.read_resource("secret://x")
        assert e.value.code == -32600 and e.value.data["reason"] == "client_capability_missing"
        assert e.value.data["recovery"]["hint"].endswith("Or read a public resource.")
    async with McpTestClient(keyed_app(), era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.get_prompt("test_input_required_result_prompt")
        assert r["inputRequests"]["user_context"]["method"] == "elicitation/create"


# -- 2025 era: real server-to-client requests -----------------------------------------------------

def handlers(log: list[str]) -> dict[str, Any]:
    async def elicit(params: dict[str, Any] | None) -> dict[str, Any]:
        log.append("elicit")
        props = (params or {}).get("requestedSchema", {}).get("properties", {})
        content: dict[str, Any] = {k: {"string": "Ada", "boolean": True}.get(v.get("type"), "x")
                                   for k, v in props.items()}
        return {"action": "accept", "content": content}

    async def sample(params: dict[str, Any] | None) -> dict[str, Any]:
        log.append("sample")
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}

    async def roots(params: dict[str, Any] | None) -> dict[str, Any]:
        log.append("roots")
        return {"roots": [{"uri": "file:///home/ada", "name": "home"}]}

    return {"elicitation/create": elicit, "sampling/createMessage": sample, "roots/list": roots}


CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


async def test_legacy_rounds_send_real_requests_and_reenter_the_handler() -> None:
    seen: list[str] = []
    async with McpTestClient(example_app(), capabilities=CAPS, handlers=handlers(seen)) as c:
        r = await c.call_tool("test_elicitation", {"message": "Who are you?"})
        assert "action=accept" in r["content"][0]["text"] and seen == ["elicit"]
        r = await c.call_tool("test_sampling", {"prompt": "Capital of France?"})
        assert r["content"][0]["text"] == "LLM response: Paris"
        r = await c.call_tool("test_input_required_result_multi_round")
        assert r["content"][0]["text"] == "Ada likes Ada"
        r = await c.call_tool("test_input_required_result_multiple_inputs")
        assert r["content"][0]["text"] == "Paris Ada (1 roots)"
        assert seen.count("roots") == 1


async def test_legacy_refusal_names_the_capability_and_ends_at_reconnecting(
        caplog: pytest.LogCaptureFixture) -> None:
    async with McpTestClient(example_app(), capabilities={"sampling": {}}) as c:
        with caplog.at_level(logging.DEBUG, logger="mcpcore.server"):
            r = await c.call_tool("export_report", {"report_id": "q3"})
        err = tool_error(r)
        assert r["isError"] and err["code"] == -32600 and err["data"]["reason"] == "client_capability_missing"
        assert err["data"]["recovery"]["hint"] == ("Reconnect with a client that declares the `elicitation.form` "
                                                   "capability. Or call again with format supplied.")
        assert any(rec.levelno == 25 and "tool:export_report" in rec.getMessage() for rec in caplog.records)
        r = await c.call_tool("export_report", {"report_id": "q3", "format": "csv"})
        assert r["structuredContent"] == {"url": "https://reports.example.com/q3.csv"}


async def test_stateless_refusal_points_to_a_stateful_session() -> None:
    async with McpTestClient(example_app(session_mode="stateless"), capabilities=CAPS) as c:
        r = await c.call_tool("test_elicitation", {"message": "hi"})
        err = tool_error(r)
        assert "without a session" in err["message"] and "MCP_SESSION_MODE=stateless" in err["message"]
        assert "stateful" in err["data"]["recovery"]["hint"]


async def test_rounds_are_bounded_and_client_errors_fail_the_call() -> None:
    @tool
    def greedy(ctx: Context) -> str:
        """Never satisfied."""
        return ctx.request_input({"again": input_required.list_roots()})

    async def broken(params: dict[str, Any] | None) -> dict[str, Any]:
        raise McpError(-1, "user rejected")

    app = McpApp("t", "1", tools=[greedy], settings=Settings.from_env({}, max_input_rounds=3))
    calls: list[str] = []
    async with McpTestClient(app, capabilities={"roots": {}}, handlers=handlers(calls)) as c:
        r = await c.call_tool("greedy")
        assert r["isError"] and tool_error(r)["data"]["reason"] == "too_many_input_rounds"
        assert calls == ["roots"] * 3
    async with McpTestClient(app, capabilities={"roots": {}}, handlers={"roots/list": broken}) as c:
        r = await c.call_tool("greedy")
        assert r["isError"] and "could not complete roots/list: user rejected" in r["content"][0]["text"]


# -- consent gate ----------------------------------------------------------------------------------

@pytest.fixture
def sandbox(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    import examples.everything as everything

    monkeypatch.setattr(everything, "SANDBOX", tmp_path.resolve())
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "old.txt").write_text("old")
    return tmp_path


async def test_consent_gate_on_2026_is_single_use(sandbox: Any) -> None:
    async with McpTestClient(keyed_app(), era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"})
        state = r["requestState"]
        yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"}, inputResponses=yes, requestState=state)
        assert r["structuredContent"] == {"deleted": "notes/old.txt"}
        assert not (sandbox / "notes" / "old.txt").exists()
        (sandbox / "notes" / "old.txt").write_text("old")
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"}, inputResponses=yes, requestState=state)
        assert r["resultType"] == "input_required"  # a replayed id is a fresh prompt, never a proceed
        assert (sandbox / "notes" / "old.txt").exists()
        r = await c.call_tool("delete_path", {"path": "../etc/passwd"})
        assert r["isError"] and tool_error(r)["data"]["reason"] == "outside_sandbox"


async def test_twenty_concurrent_retries_delete_once(sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import examples.everything as everything

    removals: list[str] = []
    real_remove = everything.os.remove

    def counting_remove(path: Any) -> None:
        removals.append(str(path))
        real_remove(path)

    monkeypatch.setattr(everything.os, "remove", counting_remove)
    assert shutil  # rmtree is not involved for a file
    app = keyed_app()
    async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"})
        state = r["requestState"]
        yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
        results = await asyncio.gather(*(c.call_tool("delete_path", {"path": "notes/old.txt"}, inputResponses=yes,
                                                     requestState=state) for _ in range(20)))
    done = [x for x in results if x.get("structuredContent") == {"deleted": "notes/old.txt"}]
    assert len(done) == 1 and len(removals) == 1


async def test_consent_gate_on_a_2025_session_and_decline(sandbox: Any) -> None:
    async with McpTestClient(example_app(), capabilities={"elicitation": {}}, handlers=handlers([])) as c:
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"})
        assert r["structuredContent"] == {"deleted": "notes/old.txt"}

    async def decline(params: dict[str, Any] | None) -> dict[str, Any]:
        return {"action": "decline"}

    (sandbox / "notes" / "old.txt").write_text("old")
    async with McpTestClient(example_app(), capabilities={"elicitation": {}},
                             handlers={"elicitation/create": decline}) as c:
        r = await c.call_tool("delete_path", {"path": "notes/old.txt"})
        assert r["isError"] and "'decline'" in r["content"][0]["text"]
    assert (sandbox / "notes" / "old.txt").exists()
    assert time.time() > 0


# -- a broad handler cannot swallow the question ----------------------------------------------------

@tool
def swallower(ctx: Context) -> str:
    """Asks for a name inside a broad ``except Exception``."""
    got = ctx.inputs.accepted("user_name")
    if got is not None:
        return f"Hello, {got['name']}!"
    try:
        ctx.request_input({"user_name": input_required.elicit("Your name?", {"type": "object", "properties": {
            "name": {"type": "string"}}, "required": ["name"]})})
    except Exception:
        return "swallowed"
    return "unreachable"


def test_input_required_is_not_an_exception() -> None:
    from mcpcore import InputRequired

    assert issubclass(InputRequired, BaseException) and not issubclass(InputRequired, Exception)


async def test_except_exception_in_a_tool_does_not_swallow_the_question_modern() -> None:
    app = McpApp("t", "1", tools=[swallower], settings=Settings.from_env({}, request_state_key=KEY))
    async with McpTestClient(app, era="modern", capabilities={"elicitation": {}}) as c:
        r = await c.call_tool("swallower")
        assert r["resultType"] == "input_required" and list(r["inputRequests"]) == ["user_name"]
        r = await c.call_tool("swallower", inputResponses=ACCEPT_NAME)
        assert r["resultType"] == "complete" and r["content"][0]["text"] == "Hello, Ada!"


async def test_except_exception_in_a_tool_does_not_swallow_the_question_legacy() -> None:
    seen: list[str] = []
    app = McpApp("t", "1", tools=[swallower], settings=Settings.from_env({}))
    async with McpTestClient(app, capabilities=CAPS, handlers=handlers(seen)) as c:
        r = await c.call_tool("swallower")
        assert seen == ["elicit"] and r["content"][0]["text"] == "Hello, Ada!"
        assert "isError" not in r


async def test_input_asked_where_no_round_can_run_is_an_internal_error() -> None:
    def asks(ctx: Context) -> list[dict[str, Any]]:
        return ctx.request_input(request_state="x")

    @resource("listed://{name}", list=asks)
    def listed(name: str) -> str:
        return name

    app = McpApp("t", "1", resources=[listed], settings=Settings.from_env({}))
    async with McpTestClient(app) as c:
        with pytest.raises(McpError) as e:
            await c.request("resources/list")
        assert e.value.code == -32603
