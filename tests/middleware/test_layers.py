"""Middleware layers: their order, params and results they change, short circuits in each method's
error shape, typed values for handlers and dependencies, notifications, input rounds passing
through, the host app's request state; both eras over HTTP, and stdio in process."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpcore import (
    Call,
    CallNext,
    Context,
    Depends,
    JsonRpcErrorCode,
    Key,
    McpApp,
    McpError,
    Middleware,
    Settings,
    input_required,
    prompt,
    resource,
    tool,
)
from mcpcore.testing import McpTestClient, tool_error

from .stdio_pipe import StdioSession

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "modern"]


class User:
    def __init__(self, name: str) -> None:
        self.name = name


TAG = Key[str]("tag")


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
async def whoami(ctx: Context) -> str:
    """Name the user a layer put on the request."""
    return f"{ctx.values[User].name}/{ctx.values.get(TAG, 'untagged')}"


def user_name(ctx: Context) -> str:
    return ctx.values[User].name


@tool
async def via_dependency(name: Annotated[str, Depends(user_name)]) -> str:
    """Name the user, through a dependency."""
    return name


@tool
async def ask(ctx: Context) -> str:
    """Ask the caller for a name."""
    answer = ctx.inputs.accepted("who")
    if answer is None:
        return ctx.request_input({"who": input_required.elicit("Who?", {"type": "object", "properties": {
            "name": {"type": "string"}}})})
    return f"hello {answer['name']}"


@prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello {name}"


@resource("note://{id}", name="note", mime_type="text/plain")
def note(id: str) -> str:
    """A note."""
    return f"note {id}"


class Recorder(Middleware):
    def __init__(self, label: str, trail: list[str]) -> None:
        self.label = label
        self.trail = trail

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        self.trail.append(f"{self.label}>{call.method}")
        result = await call_next(call)
        self.trail.append(f"{self.label}<{call.method}")
        return result

    async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
        self.trail.append(f"{self.label}:tool:{call.name}")
        return await call_next(call)

    async def on_notification(self, call: Call, call_next: CallNext) -> Any:
        self.trail.append(f"{self.label}:note:{call.method}")
        return await call_next(call)


class Identify(Middleware):
    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        call.ctx.values[User] = User("ada")
        call.ctx.values[TAG] = "blue"
        return await call_next(call)


def app_with(*layers: Middleware, **settings: Any) -> McpApp:
    return McpApp("layered", "1.0", tools=[echo, whoami, via_dependency, ask], prompts=[greet], resources=[note],
                  middleware=list(layers), settings=Settings.from_env({}, **settings))


@pytest.mark.parametrize("era", ERAS)
async def test_the_first_layer_is_outermost_and_its_general_hook_runs_first(era: str) -> None:
    trail: list[str] = []
    app = app_with(Recorder("A", trail), Recorder("B", trail))
    async with McpTestClient(app, era=era) as c:
        trail.clear()
        await c.call_tool("echo", {"text": "x"})
        assert trail == ["A>tools/call", "A:tool:echo", "B>tools/call", "B:tool:echo", "B<tools/call",
                         "A<tools/call"]
        trail.clear()
        await c.list_tools()
        assert trail == ["A>tools/list", "B>tools/list", "B<tools/list", "A<tools/list"]
    assert [layer.name for layer in app.layers][-2:] == ["Recorder", "Recorder"]
    assert [layer.kind for layer in app.layers][:6] == ["framework"] * 6


async def test_client_notifications_pass_the_notification_hooks() -> None:
    trail: list[str] = []
    async with McpTestClient(app_with(Recorder("A", trail))):
        pass
    assert "A:note:notifications/initialized" in trail


@pytest.mark.parametrize("era", ERAS)
async def test_a_layer_changes_params_before_and_the_result_after(era: str) -> None:
    class Shout(Middleware):
        async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
            call.params["arguments"]["text"] = call.params["arguments"]["text"].upper()
            result = await call_next(call)
            result["content"].append({"type": "text", "text": "(shouted)"})
            return result

    class HideEcho(Middleware):
        async def on_list_tools(self, call: Call, call_next: CallNext) -> Any:
            result = await call_next(call)
            result["tools"] = [t for t in result["tools"] if t["name"] != "echo"]
            return result

    app = app_with(Shout(), HideEcho())
    async with McpTestClient(app, era=era) as c:
        r = await c.call_tool("echo", {"text": "hi"})
        assert r["content"] == [{"type": "text", "text": "HI"}, {"type": "text", "text": "(shouted)"}]
        for _ in range(2):  # the layer's changes never reach the cached list another caller gets
            names = [t["name"] for t in await c.list_tools()]
            assert "echo" not in names and "whoami" in names
    async with McpTestClient(app_with(), era=era) as c:
        assert "echo" in [t["name"] for t in await c.list_tools()]


@pytest.mark.parametrize("era", ERAS)
async def test_a_layer_that_raises_answers_in_the_methods_own_error_shape(era: str) -> None:
    class Refuse(Middleware):
        async def on_request(self, call: Call, call_next: CallNext) -> Any:
            if call.name == "secret" or call.params.get("arguments", {}).get("text") == "no":
                raise McpError(JsonRpcErrorCode.Forbidden, "Not today.", {"reason": "refused"})
            if call.method == "prompts/get":
                raise RuntimeError("boom")
            return await call_next(call)

    async with McpTestClient(app_with(Refuse()), era=era) as c:
        r = await c.call_tool("echo", {"text": "no"})
        assert r["isError"] and tool_error(r)["code"] == -32005 and tool_error(r)["data"]["reason"] == "refused"
        with pytest.raises(McpError) as e:
            await c.get_prompt("greet", {"name": "x"})
        assert e.value.code == JsonRpcErrorCode.InternalError
        with pytest.raises(McpError) as e:  # an unknown tool stays the JSON-RPC error it is without layers
            await c.call_tool("nope", {})
        assert e.value.code == JsonRpcErrorCode.InvalidParams and e.value.data["reason"] == "unknown_tool"


@pytest.mark.parametrize("era", ERAS)
async def test_a_layer_may_answer_without_calling_the_method(era: str) -> None:
    class Cache(Middleware):
        async def on_read_resource(self, call: Call, call_next: CallNext) -> Any:
            if call.name == "note://cached":
                return {"contents": [{"uri": "note://cached", "mimeType": "text/plain", "text": "from cache"}]}
            return await call_next(call)

    async with McpTestClient(app_with(Cache()), era=era) as c:
        assert (await c.read_resource("note://cached"))["contents"][0]["text"] == "from cache"
        assert (await c.read_resource("note://1"))["contents"][0]["text"] == "note 1"


@pytest.mark.parametrize("era", ERAS)
async def test_values_a_layer_sets_reach_handlers_and_dependencies_typed(era: str) -> None:
    async with McpTestClient(app_with(Identify()), era=era) as c:
        assert (await c.call_tool("whoami"))["content"][0]["text"] == "ada/blue"
        assert (await c.call_tool("via_dependency"))["content"][0]["text"] == "ada"
    async with McpTestClient(app_with(), era=era) as c:  # no layer set it: an error, never a None
        assert (await c.call_tool("whoami"))["isError"]


def test_values_refuse_a_value_of_the_wrong_class() -> None:
    from mcpcore.testing import create_mock_context

    ctx = create_mock_context()
    with pytest.raises(TypeError):
        ctx.values[User] = "ada"  # type: ignore[assignment]
    with pytest.raises(LookupError):
        ctx.values[User]
    ctx.values[TAG] = "x"
    assert ctx.values[TAG] == "x" and TAG in ctx.values and ctx.values.get(User) is None


@pytest.mark.parametrize("era", ERAS)
async def test_asking_the_caller_passes_through_the_layers(era: str) -> None:
    trail: list[str] = []
    app = app_with(Recorder("A", trail))
    answers = {"elicitation/create": lambda params: {"action": "accept", "content": {"name": "Ada"}}}
    async with McpTestClient(app, era=era, capabilities={"elicitation": {}}, handlers=answers) as c:
        if era == "legacy":  # the framework runs the rounds inside the one call the layer sees
            r = await c.call_tool("ask")
            assert r["content"][0]["text"] == "hello Ada"
            assert trail.count("A>tools/call") == 1 and trail.count("A<tools/call") == 1
        else:  # the layer sees the input_required result, then the retry
            first = await c.call_tool("ask")
            assert first["resultType"] == "input_required"
            r = await c.request("tools/call", {"name": "ask", "inputResponses": {
                "who": {"action": "accept", "content": {"name": "Ada"}}}})
            assert r["content"][0]["text"] == "hello Ada"
            assert trail.count("A<tools/call") == 2


async def test_a_layer_sees_the_caller_and_can_log_to_it() -> None:
    seen: dict[str, Any] = {}

    class Look(Middleware):
        async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
            ctx = call.ctx
            seen.update(tenant=ctx.tenant_id, session=ctx.session_id, version=ctx.protocol_version,
                        request=call.request_id, agent=ctx.http.headers.get("user-agent") if ctx.http else None)
            ctx.log.info("layer was here")
            return await call_next(call)

    async with McpTestClient(app_with(Look()), log_level="debug") as c:
        await c.request("logging/setLevel", {"level": "debug"})
        await c.call_tool("echo", {"text": "x"})
        assert seen["tenant"] == "default" and seen["session"] == c.session_id and seen["request"]
        assert seen["agent"].startswith("python-httpx")
        assert any(m["params"]["data"]["message"] == "layer was here" for m in c.messages
                   if m["method"] == "notifications/message")


async def test_layers_start_and_stop_with_the_app() -> None:
    events: list[str] = []

    class Lifecycle(Middleware):
        async def startup(self, settings: Settings, redis: Any = None) -> None:
            events.append(f"start redis={redis is not None}")

        async def shutdown(self) -> None:
            events.append("stop")

    app = app_with(Lifecycle())
    async with McpTestClient(app):
        assert events == ["start redis=False"]
    assert events == ["start redis=False", "stop"]
    with pytest.raises(TypeError):
        McpApp("bad", middleware=[object()])  # type: ignore[list-item]


async def test_add_middleware_before_start() -> None:
    trail: list[str] = []
    app = app_with()
    app.add_middleware(Recorder("late", trail))
    async with McpTestClient(app, era="modern") as c:
        await c.call_tool("echo", {"text": "x"})
        with pytest.raises(RuntimeError):
            app.add_middleware(Recorder("too late", trail))
    assert "late>tools/call" in trail


async def test_the_host_apps_request_state_reaches_handlers_and_dependencies() -> None:
    class HostAuth:
        """A host's pure ASGI middleware, as FastAPI users write them: sets request.state.user."""

        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                scope.setdefault("state", {})["user"] = "grace"
            await self.app(scope, receive, send)

    def host_user(ctx: Context) -> str:
        assert ctx.http is not None
        return f"{ctx.http.state.user}@{ctx.http.client[0] if ctx.http.client else '?'}"

    @tool
    async def host_whoami(who: Annotated[str, Depends(host_user)], ctx: Context) -> str:
        """Who the host says is calling."""
        assert ctx.http is not None
        return f"{who} {ctx.http.headers['x-trace']} {ctx.http.state.get('missing', '-')}"

    mcp = McpApp("hosted", tools=[host_whoami], settings=Settings.from_env({}))
    from starlette.middleware import Middleware as StarletteMiddleware

    host = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan,
                     middleware=[StarletteMiddleware(HostAuth)])
    async with host.router.lifespan_context(host):
        for era in ERAS:
            async with McpTestClient(host, url="http://127.0.0.1:8000/mcp/", era=era,
                                     headers={"x-trace": "t-1"}) as c:
                r = await c.call_tool("host_whoami")
                assert r["content"][0]["text"] == "grace@127.0.0.1 t-1 -"


async def test_stdio_serves_layers_and_dependencies() -> None:
    trail: list[str] = []
    app = app_with(Identify(), Recorder("A", trail))
    async with StdioSession(app) as s:
        init = await s.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "1"}})
        assert init["result"]["serverInfo"]["name"] == "layered"
        await s.notify("notifications/initialized")
        r = await s.request("tools/call", {"name": "via_dependency", "arguments": {}})
        assert r["result"]["content"][0]["text"] == "ada"
        r = await s.request("tools/call", {"name": "whoami", "arguments": {}, "_meta": s.modern_meta})
        assert r["result"]["content"][0]["text"] == "ada/blue"
    assert "A:note:notifications/initialized" in trail
    assert trail.count("A:tool:via_dependency") == 1 and trail.count("A:tool:whoami") == 1


async def test_the_chain_of_each_method_is_built_once() -> None:
    app = app_with(Recorder("A", []))
    async with McpTestClient(app, era="modern") as c:
        await c.call_tool("echo", {"text": "x"})
        layers = app.dispatcher.layers
        assert layers is not None
        chain = layers.request("tools/call")
        await c.call_tool("echo", {"text": "y"})
        assert layers.request("tools/call") is chain
    bare = app_with()
    assert bare.dispatcher.layers is None


async def test_a_method_no_layer_hooks_is_served_as_without_layers() -> None:
    class OnlyPrompts(Middleware):
        async def on_get_prompt(self, call: Call, call_next: CallNext) -> Any:
            return await call_next(call)

    app = app_with(OnlyPrompts())
    assert app.dispatcher.layers is not None
    assert app.dispatcher.layers.request("tools/call") is None
    assert app.dispatcher.layers.request("prompts/get") is not None


@pytest.mark.parametrize("era", ERAS)
async def test_the_methods_own_refusals_keep_their_shape_through_layers(era: str) -> None:
    import time

    import jwt

    secret = "k" * 40

    @tool(auth=["admin"])
    async def admin_only() -> str:
        """Admins only."""
        return "ok"

    class Rethrow(Middleware):
        async def on_call_tool(self, call: Call, call_next: CallNext) -> Any:
            try:
                return await call_next(call)
            except McpError:
                raise  # the method's own error, passed on as it is

    token = jwt.encode({"sub": "u", "cid": "c", "tid": "t", "exp": int(time.time()) + 60}, secret, algorithm="HS256")
    app = McpApp("scoped", tools=[admin_only], middleware=[Rethrow(), Recorder("A", [])],
                 settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key=secret))
    async with McpTestClient(app, era=era, headers={"authorization": f"Bearer {token}"}) as c:
        with pytest.raises(McpError) as e:
            await c.call_tool("admin_only")
        assert e.value.code == JsonRpcErrorCode.Forbidden and e.value.http_status == 403  # type: ignore[attr-defined]
