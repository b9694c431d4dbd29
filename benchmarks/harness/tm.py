"""The TM-style workload (after TM Dev Lab's MCP benchmark v2): its services, its load and its
answer checks, knowing no scenario by name.

* **Services**: a private redis-server and the small catalog HTTP API (``servers/tm_api.py``
  under uvicorn), both on the load CPU; every server under test reaches them through
  ``BENCH_REDIS_URL`` and ``BENCH_API_URL``.
* **Load**: wrk with one connection per thread, ``VUS`` of them (the published run's 50 virtual
  users). In the ``session`` form each connection loops over the published per-call session,
  ``initialize`` -> ``notifications/initialized`` -> ``tools/call`` -> ``DELETE``, with the
  session id read from the initialize answer; in the ``sessionless`` form it sends one
  2026-07-28 ``tools/call`` per request. The call cycles through the three tools with varying
  arguments. The Lua ``done()`` reports wrk's numbers plus the tool calls that answered a result
  and the ones that did not.
* **Checks**: before and after every load the harness runs the three tools itself and checks
  the answers against the catalog API and Redis (a checkout is then seen in the user's cart).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from .catalog import Server
from .config import ACCEPT, LEGACY, MODERN, ServerFailed
from .launch import uvicorn_command
from .machine import Tools
from .processes import free_port, stop, track
from .redis_server import RedisDeployment, redis_server
from .sampling import proc_cpu_seconds
from .wire import parse_response

VUS = 50
"""Virtual users: wrk threads, one connection each (the published run's k6 VUs)."""
CATEGORIES = ("books", "music", "garden", "kitchen", "toys", "tools", "sports", "office")
USERS = 1_000
PRODUCTS = 10_000
_API = Server("tm_api", "catalog API", "tm_api", False, "bare")


@dataclass(frozen=True)
class Services:
    """The workload's Redis and catalog API, as the servers under test reach them."""

    redis: RedisDeployment
    api_url: str
    api_pid: int

    def env(self) -> dict[str, str]:
        """What every server under test is given to reach them."""
        return {"BENCH_REDIS_URL": self.redis.url, "BENCH_API_URL": self.api_url}

    def cpu_seconds(self) -> float | None:
        """CPU time of redis-server and the API together."""
        api, redis = proc_cpu_seconds(self.api_pid), self.redis.cpu_seconds()
        return None if api is None or redis is None else api + redis


@contextlib.contextmanager
def services(tools: Tools, workdir: Path, python: Path) -> Iterator[Services]:
    """Start redis-server and the catalog API on the load CPU; both ended by PID on exit.

    Raises:
        ServerFailed: redis-server is missing or either did not start.
    """
    with redis_server(tools, workdir) as redis:
        port = free_port()
        log_path = workdir / f"tm-api-{port}.log"
        with open(log_path, "wb") as logf:
            proc = subprocess.Popen([*tools.load_prefix(), *uvicorn_command(_API, python, port)],
                                    stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
        track(proc)
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise ServerFailed(f"the catalog API did not start: {log_path.read_text(errors='replace')[-300:]}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                time.sleep(0.03)
            yield Services(redis, f"http://127.0.0.1:{port}", proc.pid)
        finally:
            stop(proc)


def tool_call(n: int, vu: int = 0) -> tuple[str, dict[str, Any]]:
    """Call ``n`` of virtual user ``vu``: (tool, arguments); the Lua script makes the same ones."""
    user = (vu * 97 + n) % USERS + 1
    which = n % 3
    if which == 0:
        return "search_products", {"category": CATEGORIES[n % len(CATEGORIES)], "limit": 10}
    if which == 1:
        return "get_user_cart", {"user_id": user}
    return "checkout", {"user_id": user, "product_id": (n * 7919) % PRODUCTS + 1, "quantity": n % 5 + 1}


_LUA = r"""
local form = "%(form)s"
local init_body = [==[%(init)s]==]
local initialized_body = [==[{"jsonrpc":"2.0","method":"notifications/initialized"}]==]
local cats = {"books", "music", "garden", "kitchen", "toys", "tools", "sports", "office"}
local threads = {}
-- Globals, not locals: setup() sets vu in each thread's state, done() reads calls and app_errors.
vu, calls, app_errors = 0, 0, 0
local n, step, sid = 0, 0, nil

function setup(thread)
  thread:set("vu", #threads)
  table.insert(threads, thread)
end

local function call_body(k)
  local user = (vu * 97 + k) %% %(users)d + 1
  local which = k %% 3
  local name, args
  if which == 0 then
    name = "search_products"
    args = '{"category":"' .. cats[k %% 8 + 1] .. '","limit":10}'
  elseif which == 1 then
    name = "get_user_cart"
    args = '{"user_id":' .. user .. '}'
  else
    name = "checkout"
    args = '{"user_id":' .. user .. ',"product_id":' .. ((k * 7919) %% %(products)d + 1)
      .. ',"quantity":' .. (k %% 5 + 1) .. '}'
  end
  local meta = ""
  if form == "sessionless" then
    meta = ',"_meta":{"io.modelcontextprotocol/protocolVersion":"%(modern)s",'
      .. '"io.modelcontextprotocol/clientCapabilities":{}}'
  end
  return name, '{"jsonrpc":"2.0","id":' .. k .. ',"method":"tools/call","params":{"name":"' .. name
    .. '","arguments":' .. args .. meta .. '}}'
end

local function headers(extra)
  local h = {["Content-Type"] = "application/json", ["Accept"] = "%(accept)s"}
  for k, v in pairs(extra) do h[k] = v end
  return h
end

function request()
  if form == "sessionless" then
    n = n + 1
    local name, body = call_body(n)
    return wrk.format("POST", nil, headers({["MCP-Protocol-Version"] = "%(modern)s", ["Mcp-Method"] = "tools/call",
                                             ["Mcp-Name"] = name}), body)
  end
  if step == 0 then
    return wrk.format("POST", nil, headers({}), init_body)
  end
  local sh = headers({["Mcp-Session-Id"] = sid, ["MCP-Protocol-Version"] = "%(legacy)s"})
  if step == 1 then
    return wrk.format("POST", nil, sh, initialized_body)
  elseif step == 2 then
    n = n + 1
    local _, body = call_body(n)
    return wrk.format("POST", nil, sh, body)
  end
  return wrk.format("DELETE", nil, sh, nil)
end

local function answered(status, body)
  return status == 200 and string.find(body, '"result"', 1, true) ~= nil
    and string.find(body, '"isError":true', 1, true) == nil
end

function response(status, hdrs, body)
  if form == "sessionless" then
    if answered(status, body) then calls = calls + 1 else app_errors = app_errors + 1 end
    return
  end
  if step == 0 then
    sid = nil
    for k, v in pairs(hdrs) do
      if string.lower(k) == "mcp-session-id" then sid = v end
    end
    if status == 200 and sid then step = 1 else app_errors = app_errors + 1 end
  elseif step == 1 then
    if status == 202 or status == 200 then step = 2 else app_errors = app_errors + 1; step = 3 end
  elseif step == 2 then
    if answered(status, body) then calls = calls + 1 else app_errors = app_errors + 1 end
    step = 3
  else
    if status >= 300 then app_errors = app_errors + 1 end
    step = 0
  end
end

function done(summary, latency, requests)
  local total_calls, total_errors = 0, 0
  for _, t in ipairs(threads) do
    total_calls = total_calls + (tonumber(t:get("calls")) or 0)
    total_errors = total_errors + (tonumber(t:get("app_errors")) or 0)
  end
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%%d,"duration_us":%%d,"bytes":%%d,"err_connect":%%d,"err_read":%%d,'
    .. '"err_write":%%d,"err_status":%%d,"err_timeout":%%d,"p50_us":%%d,"p90_us":%%d,"p99_us":%%d,"p999_us":%%d,'
    .. '"max_us":%%d,"mean_us":%%.1f,"calls":%%d,"app_errors":%%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean, total_calls, total_errors))
end
"""


def lua_script(form: str) -> str:
    """wrk's script for ``form`` ("session": the published per-call session; "sessionless")."""
    init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": LEGACY, "capabilities": {},
                                    "clientInfo": {"name": "tm-bench", "version": "1"}}}).decode()
    return _LUA % {"form": form, "init": init, "users": USERS, "products": PRODUCTS, "modern": MODERN,
                   "legacy": LEGACY, "accept": ACCEPT}


def _call(client: httpx.Client, url: str, headers: dict[str, str], rid: int, name: str, args: dict[str, Any],
          sessionless: bool) -> tuple[dict[str, Any], httpx.Response]:
    """One tools/call; the tool's JSON document and the response. Raises ServerFailed."""
    params: dict[str, Any] = {"name": name, "arguments": args}
    h = dict(headers)
    if sessionless:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        h.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
    r = client.post(url, content=orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}),
                    headers=h)
    if r.status_code != 200:
        raise ServerFailed(f"{name}: HTTP {r.status_code}: {r.text[:300]}")
    final = [m for m in parse_response(r)[0] if m.get("id") == rid]
    if len(final) != 1 or "result" not in final[0]:
        raise ServerFailed(f"{name}: no result: {r.text[:300]}")
    result = final[0]["result"]
    try:
        if result.get("isError"):
            raise ValueError("isError")
        return dict(orjson.loads(result["content"][0]["text"])), r
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ServerFailed(f"{name}: not the tool's document ({exc}): {r.text[:300]}") from exc


def check_workload(client: httpx.Client, url: str, form: str, api_url: str) -> dict[str, Any]:
    """Run the three tools once (in one session for ``form`` "session", which is then deleted)
    and check every answer against the catalog API and Redis; what was seen. Raises ServerFailed."""
    sessionless = form == "sessionless"
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    seen: dict[str, Any] = {}
    if not sessionless:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "tm-check", "version": "1"}}}
        r = client.post(url, content=orjson.dumps(init), headers=headers)
        sid = r.headers.get("mcp-session-id")
        if r.status_code != 200 or not sid:
            raise ServerFailed(f"initialize: HTTP {r.status_code}, session id {sid!r}: {r.text[:300]}")
        headers.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
        r = client.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
        if r.status_code not in (200, 202):
            raise ServerFailed(f"notifications/initialized: HTTP {r.status_code}")
    api = httpx.Client(base_url=api_url, timeout=10, trust_env=False)
    with api:
        user, product, qty = 424, 4242, 3
        order, resp = _call(client, url, headers, 1, "checkout",
                            {"user_id": user, "product_id": product, "quantity": qty}, sessionless)
        price = api.get(f"/products/{product}").json()["price_cents"]
        if order.get("total_cents") != price * qty or not isinstance(order.get("order_id"), int):
            raise ServerFailed(f"checkout: wrong answer {order} (price {price} x {qty})")
        cart, _ = _call(client, url, headers, 2, "get_user_cart", {"user_id": user}, sessionless)
        if cart.get("name") != api.get(f"/users/{user}").json()["name"] or (cart.get("recent") or [None])[0] != product:
            raise ServerFailed(f"get_user_cart: wrong answer {cart} (the checkout of product {product} not seen)")
        found, _ = _call(client, url, headers, 3, "search_products", {"category": "toys", "limit": 10}, sessionless)
        want = [p["id"] for p in api.get("/products", params={"category": "toys", "limit": 10}).json()["items"]]
        if found.get("ids") != want or found.get("count") != 10 or not found.get("searches"):
            raise ServerFailed(f"search_products: wrong answer {found} (want ids {want})")
    seen.update(content_type=resp.headers.get("content-type", "").split(";")[0], bytes=len(resp.content))
    if not sessionless:
        r = client.delete(url, headers=headers)
        if r.status_code >= 300:
            raise ServerFailed(f"DELETE of the session: HTTP {r.status_code}: {r.text[:200]}")
        after = client.post(url, content=b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}', headers=headers)
        seen.update(delete=r.status_code, after_delete=after.status_code)
    return seen
