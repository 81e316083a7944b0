"""Clients of the official Python SDK in front of `mcp-runtime serve --listen`.

    python serve_http_client.py clients URL TOKEN UP_LOG SLOW_LOG
    python serve_http_client.py limits URL
    python serve_http_client.py abandon URL BARE FULL
    python serve_http_client.py crash URL

`clients`: checks the listener's refusals with plain HTTP (no token, a wrong token, a
foreign Origin or Host, an oversized body), reads `/healthz`, then runs SDK clients
in both eras (`legacy`, `2026-07-28`): eight handshake sessions at once and one
sessionless client each list the tools and call `mcp__up__echo` (with progress), a
tool of a server that failed to start, and `mcp__up__pid` (then the number of
`tools/list` requests in UP_LOG is reported); a handshake session also
calls `mcp__up__ask`, whose question it answers. A client of each era also cancels a
call to `slow` (whose calls never end, its messages logged in SLOW_LOG) and waits
for the server to be told.

`limits` (a gateway with `max_sessions = 2`, `session_idle_sec = 1`): opens two
sessions and leaves them without closing them, is refused a third, then waits for
the idle sessions' upstream processes to end and opens one more.

`abandon`: opens BARE sessions with `initialize` alone and FULL sessions whose
servers start, leaves them, and waits until `/healthz` counts no session and every
server process has ended.

`crash`: one session calls `mcp__up__crash`, whose server exits mid-call, while
another calls `mcp__up__echo` twenty times.

`shared` (servers `one`, handshake-era, and `new`, 2026-07-28, with shared
connections beside `own`, a server of each session's own): two handshake sessions
and a sessionless client, each answering elicitation with its own name, list the
tools and read the pids of the servers they reach; each calls `mcp__one__ask` in
turn, then all call `mcp__new__ask` at once.

`sessionless_bound` (a gateway with `max_sessions = 2`): three 2026-07-28 clients,
each declaring other capabilities (so each has servers of its own), list the tools
in turn; the report says what each got.

`read_asking`: a client of each era reads `fixture://asked`, whose server asks
it a question first, and reports the text it read.

`resumed`: a handshake session (plain HTTP) calls `mcp__up__ask` and drops the
call's stream once the server's question is on it; resumes it (`Last-Event-ID`),
answers, and reports the message that ended it; then resumes it again with its
first event's id (`late`), and with that id bearing another process's mark
(`foreign`), reporting what each resumption carried; and whether every event id of
the call named it alike.

`unlistened`: a handshake session that never opens a listen stream (plain HTTP)
calls `mcp__up__ask` and reads `fixture://asked`, each of whose servers asks a
question; reports, for each, the methods that came on the request's own event
stream and the result.

`subscriptions` (server `one`, shared, with the fixture's resource): two sessions
take turns subscribing to `fixture://counter` while the other bumps it; each
reports the notifications it heard.

`one_after_another URL UP_LOG` (server `up` required): three handshake sessions
open one after another, each once the one before has its servers, and stay open; reports the pids of their
`up` servers and how many `tools/list` requests UP_LOG holds.

Prints what it saw as one JSON object.
"""
import contextlib
import json
import sys

import anyio
import httpx2
from mcp import Client, types
from serve_common import logged, wait_until
from mcp.client.streamable_http import streamable_http_client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "http client", "count": 2})


def client(url, mode, token=None, terminate=True, on_elicit=on_elicit, **handlers):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    # A handshake-era client is asked the servers' questions as requests; a
    # 2026-07-28 client in its calls' input-required results. Either answers them.
    return Client(
        streamable_http_client(url, http_client=http, terminate_on_close=terminate),
        mode=mode,
        elicitation_callback=on_elicit,
        **handlers,
    )


async def session(url, mode, token):
    async with client(url, mode, token) as c:
        # A server still starting when the session began joins the list later.
        with anyio.fail_after(20):
            while "mcp__up__echo" not in (tools := sorted(t.name for t in (await c.list_tools()).tools)):
                await anyio.sleep(0.05)
        progress = []

        async def on_progress(done, total, message):
            progress.append([done, total])

        echo = await c.call_tool("mcp__up__echo", {"text": "hi"}, progress_callback=on_progress)
        down = await c.call_tool("mcp__down__anything", {})
        pid = await c.call_tool("mcp__up__pid", {})
        asked = (await c.call_tool("mcp__up__ask", {})).structured_content
        return {
            "asked": asked,
            "tools": tools,
            "echo": echo.structured_content,
            "progress": progress,
            "down_is_error": bool(down.is_error),
            "down_text": down.content[0].text if down.content else "",
            "pid": pid.structured_content["pid"],
        }


async def refusals(url, token):
    seen = {}
    health = url.replace("/mcp", "/healthz")
    async with httpx2.AsyncClient() as http:
        r = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        seen["no_token"] = [r.status_code, r.headers.get("www-authenticate")]
        r = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "authorization": "Bearer wrong"})
        seen["wrong_token"] = [r.status_code, r.headers.get("www-authenticate")]
        r = await http.get(health)
        seen["health_no_token"] = r.status_code
        auth = {"authorization": f"Bearer {token}"}
        r = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth, "origin": "https://evil.example"})
        seen["foreign_origin"] = r.status_code
        r = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth, "origin": "http://localhost:3000"})
        seen["loopback_origin"] = r.status_code
        r = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth, "host": "rebound.example"})
        seen["foreign_host"] = r.status_code
        # Just over the gateway's 1 MiB: refused with 413 once the bound is passed.
        # The client may still be writing the rest then, and see the connection
        # closed instead of the answer.
        big = {**INITIALIZE, "params": {**INITIALIZE["params"], "pad": "x" * (1024 * 1024)}}
        try:
            r = await http.post(url, json=big, headers={**ACCEPT, **auth})
            seen["oversized"] = r.status_code
        except httpx2.RemoteProtocolError:
            seen["oversized"] = "closed"
        r = await http.get(health, headers=auth)
        seen["health"] = r.json()
        r = await http.get(url.replace("/mcp", "/other"), headers=auth)
        seen["other_path"] = r.status_code
    return seen


async def cancelled(url, token, mode, slow_log, before):
    """Cancels a call to `slow` once its server has it; whether the server was told."""
    async with client(url, mode, token) as c:
        async with anyio.create_task_group() as group:
            group.start_soon(c.call_tool, "mcp__slow__echo", {"text": "never"})
            with anyio.fail_after(20):
                while logged(slow_log, "tools/call") <= before:
                    await anyio.sleep(0.02)
            group.cancel_scope.cancel()
        with anyio.fail_after(20):
            while logged(slow_log, "notifications/cancelled") <= before:
                await anyio.sleep(0.02)
    return True


async def clients(url, token, up_log, slow_log):
    report = {"refusals": await refusals(url, token)}
    # The one session the refusals opened (with a loopback Origin) started its
    # servers at `initialize`: its listing comes first.
    await wait_until(lambda: logged(up_log, "tools/list") >= 1, None)
    before = logged(up_log, "tools/list")
    results = {}

    async def run(key, mode):
        results[key] = await session(url, mode, token)

    async with anyio.create_task_group() as group:
        for index in range(8):
            group.start_soon(run, f"legacy-{index}", "legacy")
        group.start_soon(run, "modern", "2026-07-28")
    report["sessions"] = results
    report["listings_of_burst"] = logged(up_log, "tools/list") - before
    report["cancelled"] = [
        await cancelled(url, token, "legacy", slow_log, 0),
        await cancelled(url, token, "2026-07-28", slow_log, 1),
    ]
    return report


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def limits(url):
    report = {}
    async with client(url, "legacy", terminate=False) as first, client(url, "legacy", terminate=False) as second:
        pids = [
            (await first.call_tool("mcp__up__pid", {})).structured_content["pid"],
            (await second.call_tool("mcp__up__pid", {})).structured_content["pid"],
        ]
        async with httpx2.AsyncClient() as http:
            r = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            report["third"] = [r.status_code, r.headers.get("retry-after")]
        # The open sessions are not affected.
        report["first_still_served"] = (await first.call_tool("mcp__up__pid", {})).structured_content["pid"] == pids[0]
    # Left without a DELETE: the gateway ends them once idle.
    with anyio.fail_after(30):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.05)
    report["idle_sessions_ended"] = True
    report["pids"] = pids
    async with client(url, "legacy") as again:
        report["after"] = len((await again.list_tools()).tools)
    return report


async def abandon(url, bare, full):
    """Opens `bare` sessions with `initialize` alone and `full` sessions whose servers
    start, leaves them all without closing them, then waits for the gateway to have
    reclaimed every session and every server process."""
    report = {}
    health = url.replace("/mcp", "/healthz")
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = 0
        for start in range(0, bare, 50):
            async def open_one():
                nonlocal opened
                r = await http.post(url, json=INITIALIZE, headers=ACCEPT)
                opened += r.status_code == 200 and "mcp-session-id" in r.headers
            async with anyio.create_task_group() as group:
                for _ in range(start, min(start + 50, bare)):
                    group.start_soon(open_one)
        report["opened"] = opened
    pids = []
    counted = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(full):
            async with client(url, "legacy", terminate=False) as c:
                pids.append((await c.call_tool("mcp__up__pid", {})).structured_content["pid"])
                # Open and just used: counted, however many idle ones were reclaimed.
                counted.append((await http.get(health)).json()["sessions"])
        report["sessions_counted_while_open"] = min(counted)
        with anyio.fail_after(60):
            while (await http.get(health)).json()["sessions"] > 0:
                await anyio.sleep(0.1)
            while any(alive(pid) for pid in pids):
                await anyio.sleep(0.05)
        report["reclaimed"] = (await http.get(health)).json()
    report["servers_left"] = sum(alive(pid) for pid in pids)
    return report


async def crash(url):
    """Two sessions: one's server crashes during a call while the other calls on."""
    report = {}
    async with client(url, "legacy") as crashing, client(url, "legacy") as steady:
        before = (await steady.call_tool("mcp__up__pid", {})).structured_content["pid"]
        echoes = []

        async def call_on():
            for index in range(20):
                result = await steady.call_tool("mcp__up__echo", {"n": index})
                echoes.append(result.structured_content["n"])

        async with anyio.create_task_group() as group:
            group.start_soon(call_on)
            crashed = await crashing.call_tool("mcp__up__crash", {})
        report["crashed"] = {
            "is_error": bool(crashed.is_error),
            "text": " ".join(block.text for block in crashed.content if block.type == "text"),
        }
        report["echoes"] = echoes
        report["steady_server_kept"] = (
            await steady.call_tool("mcp__up__pid", {})
        ).structured_content["pid"] == before
    return report


async def shared(url):
    """Three clients, two servers shared by all of them and one each has its own."""
    def answering(name):
        async def on_elicit(context, params):
            return types.ElicitResult(action="accept", content={"name": name, "count": 1})
        return on_elicit

    names = ["first", "second", "sessionless"]
    modes = ["legacy", "legacy", "2026-07-28"]
    report = {}
    async with (
        client(url, modes[0], on_elicit=answering(names[0])) as first,
        client(url, modes[1], on_elicit=answering(names[1])) as second,
        client(url, modes[2], on_elicit=answering(names[2])) as third,
    ):
        clients = [first, second, third]

        async def pid(c, server):
            return (await c.call_tool(f"mcp__{server}__pid", {})).structured_content["pid"]

        async def asked(c, server):
            result = (await c.call_tool(f"mcp__{server}__ask", {})).structured_content
            return result.get("content", {}).get("name") if result else None

        report["tools"] = [sorted(t.name for t in (await c.list_tools()).tools) for c in clients]
        report["one_pids"] = [await pid(c, "one") for c in clients]
        report["new_pids"] = [await pid(c, "new") for c in clients]
        report["own_pids"] = [await pid(c, "own") for c in clients]
        # A handshake-era server's question, one call at a time: each to its caller.
        report["one_asked"] = [await asked(c, "one") for c in clients]
        # A 2026-07-28 server's questions come inside each call: all at once.
        together = [None] * len(clients)

        async def ask_new(index):
            together[index] = await asked(clients[index], "new")

        async with anyio.create_task_group() as group:
            for index in range(len(clients)):
                group.start_soon(ask_new, index)
        report["new_asked"] = together
        async with httpx2.AsyncClient() as http:
            health = (await http.get(url.replace("/mcp", "/healthz"))).json()
        report["health_servers"] = health["servers"]
    return report


async def sessionless_bound(url):
    """Three sessionless clients past a bound of two."""
    async def on_sample(context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi"), model="m"
        )

    declared = [{}, {"elicitation_callback": on_elicit}, {"sampling_callback": on_sample}]
    report = []
    for callbacks in declared:
        try:
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **callbacks) as c,
            ):
                report.append(len((await c.list_tools()).tools))
        except Exception as error:
            # The SDK raises its error inside task groups.
            while isinstance(error, BaseExceptionGroup):
                error = error.exceptions[0]
            report.append(str(error))
    return report


async def read_asking(url):
    """A client of each era reads a resource whose server asks first."""
    report = {}
    for mode in ["legacy", "2026-07-28"]:
        async with client(url, mode) as c:
            read = await c.read_resource("fixture://asked")
            report[mode] = [getattr(content, "text", None) for content in read.contents]
    return report


async def raw_session(http, url, version, name):
    """Opens a handshake session of protocol `version` over plain HTTP, offering
    elicitation, without a listen stream; returns the headers its requests carry."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": version,
    }
    init = await http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": name, "version": "1"}},
    })
    headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


async def unlistened(url):
    """A handshake session without a listen stream is asked on its requests' streams."""
    report = {}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
        headers = await raw_session(http, url, "2025-06-18", "unlistened")

        async def request(id, method, params):
            came, result = [], []
            body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
            with anyio.move_on_after(20):
                await exchange(body, came, result.append)
            return {"came": came, "result": result[0] if result else "no answer within 20 s"}

        async def exchange(body, came, answered):
            async with http.stream("POST", url, headers=headers, json=body) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:") or not line[5:].strip():
                        continue
                    message = json.loads(line[5:])
                    if "method" in message:
                        came.append(message["method"])
                    if message.get("method") == "elicitation/create":
                        answer = {"action": "accept", "content": {"name": "unlistened", "count": 1}}
                        await http.post(url, headers=headers,
                                        json={"jsonrpc": "2.0", "id": message["id"], "result": answer})
                    elif message.get("id") == body["id"]:
                        answered(message.get("result", message.get("error")))
                        break

        report["call"] = await request(1, "tools/call", {"name": "mcp__up__ask", "arguments": {}})
        report["read"] = await request(2, "resources/read", {"uri": "fixture://asked"})
        await http.delete(url, headers=headers)
    return report


async def resumed(url):
    """A handshake session's call stream broken and resumed (`Last-Event-ID`), over
    plain HTTP: while the call waits, after it ended, and with another process's mark
    in its event id."""
    report = {}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
        headers = await raw_session(http, url, "2025-11-25", "resumed")

        async def events(response):
            """Each event's id and message (None for an event without data)."""
            event_id, data = None, ""
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    data += line[5:].strip()
                elif line == "":
                    if event_id is not None or data:
                        yield event_id, json.loads(data) if data else None
                    event_id, data = None, ""

        def resume(last_event_id):
            return http.stream("GET", url, headers={**headers, "Last-Event-ID": last_event_id})

        # The call's stream is dropped once the server's question is on it.
        call = {"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                "params": {"name": "mcp__up__ask", "arguments": {}}}
        seen = []
        with anyio.fail_after(20):
            async with http.stream("POST", url, headers=headers, json=call) as stream:
                async for event_id, message in events(stream):
                    seen.append(event_id)
                    if message and message.get("method") == "elicitation/create":
                        question = message
                        break
        priming, asked = seen[0], seen[-1]
        report["tags_alike"] = len({event_id.split("/", 2)[2] for event_id in seen}) == 1

        # Resumed in place while the call waits: the answer comes on the resumed stream.
        with anyio.fail_after(20):
            async with resume(asked) as stream:
                answer = {"action": "accept", "content": {"name": "resumed", "count": 1}}
                await http.post(url, headers=headers,
                                json={"jsonrpc": "2.0", "id": question["id"], "result": answer})
                async for event_id, message in events(stream):
                    seen.append(event_id)
                    if message and "id" in message and "method" not in message:
                        report["resumed"] = message
                        break
        report["tags_alike_after_resuming"] = len({event_id.split("/", 2)[2] for event_id in seen}) == 1

        async def ended(last_event_id):
            with anyio.fail_after(20):
                async with resume(last_event_id) as stream:
                    return [message async for _, message in events(stream) if message]

        # Its answer sent, the stream is gone: the call's error, under its id.
        report["late"] = await ended(priming)
        # Another process's mark: the same, without this process's streams asked.
        rmcp_id, tag = priming.rsplit("/", 1)
        foreign = ("0" if tag[0] != "0" else "1") + tag[1:]
        report["foreign"] = await ended(f"{rmcp_id}/{foreign}")
        await http.delete(url, headers=headers)
    return report


async def subscriptions(url):
    """Two sessions subscribe to a shared server's resource in turn."""
    heard = {"first": [], "second": []}

    def hearing(name):
        async def on_message(message):
            method = getattr(getattr(message, "root", message), "method", None)
            if method is not None:
                heard[name].append(method)
        return on_message

    def count(name, method):
        return heard[name].count(f"notifications/resources/{method}")

    async def bumped(c, times):
        # The server sends the update before the list change, and the gateway
        # passes a server's changes on in order: once both sessions heard the list
        # change, each heard the update if it was to.
        await c.call_tool("mcp__one__bump", {})
        await wait_until(
            lambda: count("first", "list_changed") >= times and count("second", "list_changed") >= times,
            None,
        )
        return [count("first", "updated"), count("second", "updated")]

    report = {}
    async with (
        client(url, "legacy", message_handler=hearing("first")) as first,
        client(url, "legacy", message_handler=hearing("second")) as second,
    ):
        await first.subscribe_resource("fixture://counter")
        report["first_subscribed"] = await bumped(second, 1)
        await second.subscribe_resource("fixture://counter")
        await first.unsubscribe_resource("fixture://counter")
        report["second_subscribed"] = await bumped(first, 2)
        await second.unsubscribe_resource("fixture://counter")
        report["none_subscribed"] = await bumped(first, 3)
    return report


async def one_after_another(url, up_log):
    report = {"pids": []}
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(3):
            # `up` is required: the session's `initialize` is answered once it is ready.
            c = await stack.enter_async_context(client(url, "legacy"))
            report["pids"].append((await c.call_tool("mcp__up__pid", {})).structured_content["pid"])
        report["listings"] = logged(up_log, "tools/list")
    return report


if __name__ == "__main__":
    command, url = sys.argv[1], sys.argv[2]
    if command == "clients":
        print(json.dumps(anyio.run(clients, url, *sys.argv[3:6])))
    elif command == "sessionless_bound":
        print(json.dumps(anyio.run(sessionless_bound, url)))
    elif command == "read_asking":
        print(json.dumps(anyio.run(read_asking, url)))
    elif command == "resumed":
        print(json.dumps(anyio.run(resumed, url)))
    elif command == "unlistened":
        print(json.dumps(anyio.run(unlistened, url)))
    elif command == "one_after_another":
        print(json.dumps(anyio.run(one_after_another, url, sys.argv[3])))
    elif command == "subscriptions":
        print(json.dumps(anyio.run(subscriptions, url)))
    elif command == "shared":
        print(json.dumps(anyio.run(shared, url)))
    elif command == "crash":
        print(json.dumps(anyio.run(crash, url)))
    elif command == "abandon":
        print(json.dumps(anyio.run(abandon, url, int(sys.argv[3]), int(sys.argv[4]))))
    else:
        print(json.dumps(anyio.run(limits, url)))
