"""MCP Apps: a tool's view served as a ui:// resource, its metadata, and the text fallback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import BaseModel

from mcpcore import ConfigurationError, Context, McpApp, McpError, Settings, tool
from mcpcore.extensions import APP_MIME_TYPE, APPS, App, Csp, supports_apps
from mcpcore.testing import McpTestClient

pytestmark = pytest.mark.anyio

APPS_CAPS = {"extensions": {APPS: {"mimeTypes": [APP_MIME_TYPE]}}}
HTML = "<!doctype html><html><body><p>chart</p></body></html>"


class Points(BaseModel):
    points: list[int]


CHART = App(html=HTML, csp=Csp(connect_domains=["https://api.example.com"], resource_domains=["https://*.cdn.io"]),
            permissions=["clipboard_write", "camera"], domain="abc.example-host.com", prefers_border=False,
            fallback=lambda data: f"{len(data['points'])} points; open the chart in an MCP Apps host")


@tool(app=CHART)
def plot(n: int = 3) -> Points:
    """Plot the first n points of the series."""
    return Points(points=list(range(n)))


@tool(app=App(uri="ui://plot/view.html", visibility=["app"], fallback="refreshed"))
def refresh(ctx: Context) -> dict[str, Any]:
    """Refresh the chart's data (called by the view itself)."""
    return {"apps": supports_apps(ctx)}


def _app() -> McpApp:
    return McpApp("apps", "1.0", tools=[plot, refresh])


async def _caps(c: McpTestClient) -> dict[str, Any]:
    if c.era == "legacy":
        return dict((c.init_result or {})["capabilities"])
    return dict((await c.request("server/discover"))["capabilities"])


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_tool_meta_resource_and_declaration(era: str) -> None:
    async with McpTestClient(_app(), era=era) as c:
        assert (await _caps(c))["extensions"] == {APPS: {"mimeTypes": [APP_MIME_TYPE]}}
        tools = {t["name"]: t for t in (await c.request("tools/list"))["tools"]}
        assert tools["plot"]["_meta"] == {"ui": {"resourceUri": "ui://plot/view.html"},
                                          "ui/resourceUri": "ui://plot/view.html"}
        assert tools["refresh"]["_meta"]["ui"] == {"resourceUri": "ui://plot/view.html", "visibility": ["app"]}
        ui = {"csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.io"]},
              "permissions": {"clipboardWrite": {}, "camera": {}}, "domain": "abc.example-host.com",
              "prefersBorder": False}
        (listed,) = (await c.request("resources/list"))["resources"]
        assert listed["uri"] == "ui://plot/view.html" and listed["mimeType"] == APP_MIME_TYPE
        assert listed["_meta"] == {"ui": ui}
        (item,) = (await c.request("resources/read", {"uri": "ui://plot/view.html"}))["contents"]
        assert item == {"uri": "ui://plot/view.html", "mimeType": APP_MIME_TYPE, "text": HTML, "_meta": {"ui": ui}}


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_client_without_apps_support_gets_the_text_fallback(era: str) -> None:
    async with McpTestClient(_app(), era=era) as c:
        r = await c.request("tools/call", {"name": "plot", "arguments": {"n": 2}})
        assert r["content"][0] == {"type": "text", "text": "2 points; open the chart in an MCP Apps host"}
        assert r["structuredContent"] == {"points": [0, 1]}
        # app-only tools stay callable through tools/call
        r = await c.request("tools/call", {"name": "refresh", "arguments": {}})
        assert r["content"][0]["text"] == "refreshed" and r["structuredContent"] == {"apps": False}
    other = {"extensions": {APPS: {"mimeTypes": ["text/uri-list"]}}}
    async with McpTestClient(_app(), era=era, capabilities=other) as c:
        r = await c.request("tools/call", {"name": "plot", "arguments": {"n": 2}})
        assert r["content"][0]["text"].startswith("2 points")


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_apps_host_gets_the_result_as_the_tool_made_it(era: str) -> None:
    async with McpTestClient(_app(), era=era, capabilities=APPS_CAPS) as c:
        r = await c.request("tools/call", {"name": "plot", "arguments": {"n": 2}})
        assert r["content"] == [{"type": "text", "text": '{"points":[0,1]}'}]
        r = await c.request("tools/call", {"name": "refresh", "arguments": {}})
        assert r["structuredContent"] == {"apps": True}


async def test_view_from_a_file_is_read_live_and_a_shared_app_serves_one_resource(tmp_path: Path) -> None:
    page = tmp_path / "view.html"
    page.write_text("<p>one</p>")
    view = App(uri="ui://dash/main.html", file=page)

    @tool(app=view)
    def first() -> str:
        """Open the dashboard on its first tab."""
        return "first tab"

    @tool(app=view)
    def second() -> str:
        """Open the dashboard on its second tab."""
        return "second tab"

    async with McpTestClient(McpApp("f", "1.0", tools=[first, second])) as c:
        assert len((await c.request("resources/list"))["resources"]) == 1
        read = {"uri": "ui://dash/main.html"}
        assert (await c.request("resources/read", read))["contents"][0]["text"] == "<p>one</p>"
        page.write_text("<p>two</p>")
        assert (await c.request("resources/read", read))["contents"][0]["text"] == "<p>two</p>"
        r = await c.request("tools/call", {"name": "first", "arguments": {}})
        assert r["content"] == [{"type": "text", "text": "first tab"}]


async def test_no_fallback_and_no_text_gets_the_structured_content_as_text() -> None:
    from mcpcore import ImageContent

    @tool(app=App(html=HTML), format=lambda v: [ImageContent(data="iVBORw0KGgo=", mime_type="image/png")])
    def picture() -> Points:
        """Draw the points as a picture."""
        return Points(points=[1])

    async with McpTestClient(McpApp("p", "1.0", tools=[picture])) as c:
        r = await c.request("tools/call", {"name": "picture", "arguments": {}})
        assert r["content"][0] == {"type": "text", "text": '{"points":[1]}'} and r["content"][1]["type"] == "image"


def test_supports_apps() -> None:
    assert supports_apps(APPS_CAPS) and supports_apps({"extensions": {APPS: {}}})
    assert not supports_apps({}) and not supports_apps(None) and not supports_apps({"extensions": {APPS: True}})


@pytest.mark.parametrize("kwargs", [
    {"uri": "https://x/view.html", "html": HTML}, {"html": HTML, "file": "x.html"}, {},
    {"html": HTML, "permissions": ["telepathy"]}, {"html": HTML, "visibility": []},
    {"html": HTML, "visibility": ["model", "user"]}, {"html": HTML, "csp": ["https://x"]},
])
def test_malformed_apps_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        App(**kwargs)


def test_lint_accepts_a_complete_app_and_flags_broken_ones(tmp_path: Path) -> None:
    from mcpcore import resource
    from mcpcore.lint import lint_definitions

    clean = lint_definitions(tools=[plot, refresh])
    assert not [f for f in clean.findings if f.rule.startswith("app-")], clean.text()

    @resource("ui://external/view.html", name="external-view", mime_type="text/html",
              description="The external view, served as plain HTML.")
    def external_view() -> str:
        return HTML

    @tool(app=App(uri="ui://external/view.html", fallback="External view."))
    def external() -> str:
        """Open the externally served view."""
        return "opened"

    @tool(app=App(file=tmp_path / "missing.html", csp={"frameDomains": ["*"], "scriptDomains": []},
                  fallback="gone"))
    def missing() -> str:
        """Open a view whose file is missing."""
        return "opened"

    report = lint_definitions(tools=[external, missing], resources=[external_view])
    found = {(f.rule, f.name) for f in report.findings}
    assert found == {("app-resource-not-found", "external"), ("app-resource-not-found", "missing"),
                     ("app-csp-malformed", "missing")}, report.text()
    (csp,) = [f for f in report.findings if f.rule == "app-csp-malformed"]
    assert "'*'" in csp.message and "scriptDomains" in csp.message


SECRET = "a" * 40


def _bearer(scope: str, tid: str = "acme") -> dict[str, str]:
    claims = {"sub": "ada", "cid": "host", "tid": tid, "scope": scope, "exp": int(time.time()) + 300}
    return {"authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


def _gated_views() -> McpApp:
    @tool(app=App(html="<p>payroll</p>"), visible_to=["hr:read"])
    def payroll() -> str:
        """Show the payroll."""
        return "payroll"

    @tool(app=App(html="<p>acme board</p>"), visible_to=lambda ctx: ctx.tenant_id == "acme")
    def board() -> str:
        """Show the acme board."""
        return "board"

    @tool(app=App(html="<p>audit</p>"), auth=["audit:read"])
    def audit() -> str:
        """Show the audit trail (listed to everyone, called with the scope)."""
        return "audit"

    shared = App(uri="ui://shared/view.html", html="<p>shared</p>")

    @tool(app=shared, visible_to=["hr:read"])
    def salaries() -> str:
        """Show salaries in the shared view."""
        return "salaries"

    @tool(app=shared, visible_to=lambda ctx: ctx.tenant_id == "acme")
    def vacations() -> str:
        """Show vacations in the shared view."""
        return "vacations"

    return McpApp("views", "1.0", tools=[payroll, board, audit, salaries, vacations],
                  settings=Settings.from_env({}, auth_mode="jwt", auth_secret_key=SECRET))


async def _views_seen(c: McpTestClient) -> tuple[set[str], set[str]]:
    listed = {r["uri"] for r in (await c.request("resources/list"))["resources"]}
    readable = set()
    for uri in ("ui://payroll/view.html", "ui://board/view.html", "ui://audit/view.html", "ui://shared/view.html"):
        try:
            await c.request("resources/read", {"uri": uri})
        except McpError as exc:
            assert (exc.data or {}).get("uri") == uri or (exc.data or {}).get("reason") == "insufficient_scope"
            continue
        readable.add(uri)
    return listed, readable


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_view_takes_its_tools_visibility_and_scopes(era: str) -> None:
    app = _gated_views()
    await app.startup()
    try:
        async with McpTestClient(app, era=era, headers=_bearer("", tid="globex")) as c:
            listed, readable = await _views_seen(c)
            # nothing names payroll, board, salaries or vacations; the audit view is listed
            # (its tool is), but reading it needs the tool's scope
            assert listed == {"ui://audit/view.html"} and readable == set()
            with pytest.raises(McpError) as e:
                await c.request("resources/read", {"uri": "ui://payroll/view.html"})
            with pytest.raises(McpError) as unknown:
                await c.request("resources/read", {"uri": "ui://nothing/view.html"})
            assert e.value.code == unknown.value.code  # the same answer as for a view that does not exist
            assert e.value.message.replace("payroll", "nothing") == unknown.value.message
        async with McpTestClient(app, era=era, headers=_bearer("", tid="acme")) as c:
            listed, readable = await _views_seen(c)
            assert listed == {"ui://board/view.html", "ui://audit/view.html", "ui://shared/view.html"}
            assert readable == {"ui://board/view.html", "ui://shared/view.html"}
        async with McpTestClient(app, era=era, headers=_bearer("hr:read audit:read", tid="globex")) as c:
            listed, readable = await _views_seen(c)
            assert listed == readable == {"ui://payroll/view.html", "ui://audit/view.html", "ui://shared/view.html"}
        app.remove_tool("payroll")  # its view goes with it; the shared view now follows vacations alone
        app.remove_tool("salaries")
        async with McpTestClient(app, era=era, headers=_bearer("hr:read audit:read", tid="globex")) as c:
            listed, readable = await _views_seen(c)
            assert listed == readable == {"ui://audit/view.html"}
    finally:
        await app.shutdown()
