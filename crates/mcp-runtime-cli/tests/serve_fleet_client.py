"""Clients of the official Python SDK in front of replicas of `mcp-runtime serve
--listen` behind haproxy.

    python serve_fleet_client.py burst URL SESSIONS UP_LOG
    python serve_fleet_client.py hold URL SESSIONS
    python serve_fleet_client.py outage URL SESSIONS
    python serve_fleet_client.py changes URL SESSIONS UP_LOG
    python serve_fleet_client.py misrouted URL OTHER_URL [KILL_PID]
    python serve_fleet_client.py moved URL_A URL_B URL_C PID [--back]
    python serve_fleet_client.py bounded URL_A URL_B

`burst`: SESSIONS handshake sessions (`legacy`) and SESSIONS 2026-07-28 clients, all
at once, each list the tools and call `mcp__up__echo` three times and `mcp__up__pid`
once; reports how many of each succeeded, the pids their calls reached, and the
number of `tools/list` requests in UP_LOG.

`hold`: opens SESSIONS handshake sessions (`legacy`) and keeps them; each calls
`mcp__up__pid`, then `mcp__up__ask`, whose server's question it holds unanswered;
once every session is asked, the pids are printed as one JSON line. Once a line
arrives on stdin, the questions are answered and those calls end (`in_flight`); each
session calls `mcp__up__echo`, then `mcp__up__ask` again (within 20 s), and SESSIONS
2026-07-28 clients opened then call `mcp__up__echo`; the last line says what each
call got: `"ok"` or the error's text.

`outage`: three phases, each begun by a line on stdin but the first. In each, the
sessions opened in earlier phases call `mcp__up__echo`, SESSIONS handshake sessions
(`legacy`) are opened and kept, each calling `mcp__up__echo`, and SESSIONS 2026-07-28
clients each call it once. In the first phase, each session opened also calls
`mcp__up__ask`, whose server's question is held unanswered into the second phase, and
answered then. Each phase ends with a JSON line of what each call got (`"ok"` or the
error's text): `held` (the earlier sessions' calls), `asked` (the held questions'
calls, second phase), `opened` and `sessionless`.

`changes`: opens SESSIONS handshake sessions (`legacy`), each listing the tools; once
the upstream (whose log is UP_LOG) has a listen stream open for each, the first
calls `mcp__up__add_tool` (a server whose tools all its clients share); once
every session heard `notifications/tools/list_changed`, each lists the tools again,
and so do a handshake session and a 2026-07-28 client opened then. Reports whether
each list holds `mcp__up__late`.

`misrouted`: a 2026-07-28 client calls `mcp__up__ask` on the replica at URL, whose
server asks it a question; its retry with the answer and the `requestState` is sent
to the replica at OTHER_URL instead, after the process KILL_PID (the first replica)
is killed, if given. Reports the result's structured content, or the error it got,
and the messages of the progress reports it heard (the server reports `answered`
once it has the answer).

`moved`: a handshake session without a listen stream is opened on the replica at
URL_A and calls `mcp__up__echo` there, then on URL_B (which restores it), with
`--back` then on URL_A again; it calls again and again there until the replica it
left last has closed its idle copy of the session (its `/healthz` counts none); then
the process PID (the replica it calls) is killed and the session calls again on
URL_C. Reports what each call got (`visits`, `last`): `"ok"` or the error's text.

`bounded`: a handshake session opened on the replica at URL_A and another on URL_B,
over plain HTTP; the first's `tools/list` is sent to URL_B, then to URL_A, and its
`DELETE` to URL_B. Reports the status and `Retry-After` of the first answer, and the
status of the other two.

Prints what it saw as one JSON object (`hold`, `outage`: a line per step).
"""
import contextlib
import json
import os
import signal
import sys

import anyio
from serve_common import logged, wait_until
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from serve_http_client import client, on_elicit, raw_session


async def burst(url, sessions, up_log):
    report = {"legacy": 0, "2026-07-28": 0, "pids": [], "errors": []}

    async def one(mode):
        try:
            async with client(url, mode) as c:
                tools = [t.name for t in (await c.list_tools()).tools]
                assert "mcp__up__echo" in tools, tools
                for n in range(3):
                    echo = await c.call_tool("mcp__up__echo", {"text": f"{mode} {n}"})
                    assert not echo.is_error, echo
                pid = (await c.call_tool("mcp__up__pid", {})).structured_content["pid"]
                report["pids"].append(pid)
                report[mode] += 1
        except Exception as error:  # noqa: BLE001 - reported, then asserted on
            report["errors"].append(f"{mode}: {error!r}")

    async with anyio.create_task_group() as group:
        for _ in range(sessions):
            group.start_soon(one, "legacy")
            group.start_soon(one, "2026-07-28")
    report["listings"] = logged(up_log, "tools/list")
    return report


async def outcome(call):
    """`"ok"` for a call that succeeds, or the text of its error."""
    try:
        result = await call
        return "ok" if not result.is_error else f"tool error: {result.content}"
    except Exception as error:  # noqa: BLE001 - reported, then asserted on
        return f"{type(error).__name__}: {error}"


async def hold(url, sessions):
    release = anyio.Event()
    questioned = [anyio.Event() for _ in range(sessions)]

    def holding(index):
        # The session's first question is held unanswered until the stdin line.
        async def on_elicit(context, params):
            questioned[index].set()
            await release.wait()
            return types.ElicitResult(action="accept", content={"name": "held", "count": 1})
        return on_elicit

    async with contextlib.AsyncExitStack() as stack:
        held = []
        for index in range(sessions):
            c = await stack.enter_async_context(client(url, "legacy", terminate=False, on_elicit=holding(index)))
            held.append(c)
        pids = [(await c.call_tool("mcp__up__pid", {})).structured_content["pid"] for c in held]
        in_flight = [None] * sessions
        ended = [anyio.Event() for _ in range(sessions)]
        group = await stack.enter_async_context(anyio.create_task_group())

        async def asking(index):
            async def call():
                with anyio.fail_after(30):
                    return await held[index].call_tool("mcp__up__ask", {})
            try:
                in_flight[index] = await outcome(call())
            finally:
                ended[index].set()

        for index in range(sessions):
            group.start_soon(asking, index)
        with anyio.fail_after(20):
            for event in questioned:
                await event.wait()
        print(json.dumps({"pids": pids}), flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        release.set()
        with anyio.fail_after(40):
            for event in ended:
                await event.wait()

        def echo(c):
            return outcome(c.call_tool("mcp__up__echo", {"text": "after"}))

        async def ask(c):
            async def call():
                with anyio.fail_after(20):
                    return await c.call_tool("mcp__up__ask", {})
            return await outcome(call())

        after = [await echo(c) for c in held]
        asked = [await ask(c) for c in held]
        sessionless = []
        for _ in range(sessions):
            async with client(url, "2026-07-28") as c:
                sessionless.append(await echo(c))
        print(json.dumps({"in_flight": in_flight, "sessions": after, "asked": asked,
                          "sessionless": sessionless}), flush=True)
        # Dropping the sessions on a dead replica may raise; the report is out.
        os._exit(0)


async def outage(url, sessions):
    release = anyio.Event()
    questioned = anyio.Event()

    async def held_question(context, params):
        questioned.set()
        await release.wait()
        return types.ElicitResult(action="accept", content={"name": "held", "count": 1})

    asked = {}
    all_asked = anyio.Event()

    async def ask(index, c):
        async def call():
            with anyio.fail_after(30):
                return await c.call_tool("mcp__up__ask", {})
        asked[index] = await outcome(call())
        if len(asked) == sessions:
            all_asked.set()

    async with contextlib.AsyncExitStack() as stack:
        group = await stack.enter_async_context(anyio.create_task_group())
        held = []
        for phase in ["before", "without", "after"]:
            if phase != "before":
                await anyio.to_thread.run_sync(sys.stdin.readline)
            report = {"held": [await outcome(c.call_tool("mcp__up__echo", {"text": phase})) for c in held]}
            if phase == "without":
                release.set()
                # Each ends within its 30 s.
                with anyio.fail_after(60):
                    await all_asked.wait()
                report["asked"] = [asked[index] for index in range(sessions)]
            report["opened"] = []
            for index in range(sessions):
                handler = held_question if phase == "before" else on_elicit
                try:
                    c = await stack.enter_async_context(client(url, "legacy", on_elicit=handler))
                except Exception as error:  # noqa: BLE001 - reported, then asserted on
                    report["opened"].append(f"{type(error).__name__}: {error}")
                    continue
                report["opened"].append(await outcome(c.call_tool("mcp__up__echo", {"text": phase})))
                held.append(c)
                if phase == "before":
                    questioned = anyio.Event()
                    group.start_soon(ask, index, c)
                    with anyio.fail_after(20):
                        await questioned.wait()
            report["sessionless"] = []
            for _ in range(sessions):
                async with client(url, "2026-07-28") as c:
                    report["sessionless"].append(await outcome(c.call_tool("mcp__up__echo", {"text": phase})))
            print(json.dumps(report), flush=True)


async def changes(url, sessions, up_log):
    heard = [0] * sessions

    def hearing(index):
        async def on_message(message):
            method = getattr(getattr(message, "root", message), "method", None)
            if method == "notifications/tools/list_changed":
                heard[index] += 1
        return on_message

    def has_late(listed):
        return "mcp__up__late" in [t.name for t in listed.tools]

    report = {}
    async with contextlib.AsyncExitStack() as stack:
        held = [
            await stack.enter_async_context(client(url, "legacy", message_handler=hearing(index)))
            for index in range(sessions)
        ]
        report["before"] = [has_late(await c.list_tools()) for c in held]
        # A notification sent before a session's listen stream opens is lost.
        await wait_until(lambda: logged(up_log, "http/GET") >= sessions, None)
        await held[0].call_tool("mcp__up__add_tool", {"name": "late"})
        await wait_until(lambda: all(heard), None)
        report["heard"] = heard
        report["after"] = [has_late(await c.list_tools()) for c in held]
        async with client(url, "legacy") as c:
            report["new_session"] = has_late(await c.list_tools())
        async with client(url, "2026-07-28") as c:
            report["new_sessionless"] = has_late(await c.list_tools())
    return report


async def misrouted(url, other_url, kill_pid=None):
    other = httpx2.URL(other_url)

    class Misroute(httpx2.AsyncHTTPTransport):
        """Sends a request that carries a `requestState` to the other replica."""

        async def handle_async_request(self, request):
            if b'"requestState"' in request.content:
                if kill_pid is not None:
                    os.kill(kill_pid, signal.SIGKILL)
                request.url = request.url.copy_with(host=other.host, port=other.port)
                request.headers["host"] = f"{other.host}:{other.port}"
            return await super().handle_async_request(request)

    http = httpx2.AsyncClient(transport=Misroute(), timeout=httpx2.Timeout(30, read=300))
    async with Client(
        streamable_http_client(url, http_client=http), mode="2026-07-28", elicitation_callback=on_elicit
    ) as c:
        progress = []

        async def on_progress(done, total, message):
            progress.append(message)

        try:
            result = await c.call_tool("mcp__up__ask", {}, progress_callback=on_progress)
            return {"error": None, "result": result.structured_content, "progress": progress}
        except Exception as error:  # noqa: BLE001 - reported, then asserted on
            return {"error": str(error), "progress": progress}


async def moved(url_a, url_b, url_c, pid, back=False):
    a, b, c = httpx2.URL(url_a), httpx2.URL(url_b), httpx2.URL(url_c)
    visits = [a, b, a] if back else [a, b]
    target = [a]

    class Route(httpx2.AsyncHTTPTransport):
        """Sends each request to the current target; refuses a listen stream."""

        async def handle_async_request(self, request):
            if request.method == "GET":
                return httpx2.Response(405, request=request)
            to = target[0]
            request.url = request.url.copy_with(host=to.host, port=to.port)
            request.headers["host"] = f"{to.host}:{to.port}"
            return await super().handle_async_request(request)

    async def sessions_at(url):
        async with httpx2.AsyncClient() as plain:
            health = await plain.get(str(url.copy_with(path="/healthz")))
            return health.json()["sessions"]

    report = {"visits": []}
    http = httpx2.AsyncClient(transport=Route(), timeout=httpx2.Timeout(30, read=300))
    async with Client(
        streamable_http_client(url_a, http_client=http, terminate_on_close=False), mode="legacy"
    ) as session:
        for to in visits:
            target[0] = to
            report["visits"].append(await outcome(session.call_tool("mcp__up__echo", {"text": str(to)})))
        # The copy on the replica left last is idle from its last answer, and closed
        # within a second or so; the session keeps the last one's in use meanwhile.
        with anyio.fail_after(20):
            while await sessions_at(visits[-2]) != 0:
                report["visits"][-1] = await outcome(session.call_tool("mcp__up__echo", {"text": "again"}))
                await anyio.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        target[0] = c
        report["last"] = await outcome(session.call_tool("mcp__up__echo", {"text": "c"}))
    return report


async def listening(url_a, url_b):
    """A session whose listen stream stays open on its first replica while a request
    goes to the second (as when the load balancer forgot where it lived), and, once
    the second's copy has ended idle, another request goes there again."""
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
        headers = await raw_session(http, url_a, "2025-06-18", "listening")
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        listen = {**headers, "Accept": "text/event-stream"}
        async with http.stream("GET", url_a, headers=listen) as stream:
            assert stream.status_code == 200, stream.status_code
            moved = await http.post(url_b, headers=headers, json=listing)
            with anyio.fail_after(20):
                while (await http.get(httpx2.URL(url_b).copy_with(path="/healthz"))).json()["sessions"] != 0:
                    await anyio.sleep(0.2)
            later = await http.post(url_b, headers=headers, json={**listing, "id": 2})
        return {"moved": moved.status_code, "later": later.status_code}


async def bounded(url_a, url_b):
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
        moving = await raw_session(http, url_a, "2025-06-18", "moving")
        await raw_session(http, url_b, "2025-06-18", "staying")
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        elsewhere = await http.post(url_b, headers=moving, json=listing)
        home = await http.post(url_a, headers=moving, json=listing)
        ended = await http.delete(url_b, headers=moving)
        return {"elsewhere": [elsewhere.status_code, elsewhere.headers.get("retry-after")],
                "home": home.status_code, "ended_elsewhere": ended.status_code}


if __name__ == "__main__":
    command, url = sys.argv[1], sys.argv[2]
    if command == "burst":
        print(json.dumps(anyio.run(burst, url, int(sys.argv[3]), sys.argv[4])))
    elif command == "changes":
        print(json.dumps(anyio.run(changes, url, int(sys.argv[3]), sys.argv[4])))
    elif command == "listening":
        print(json.dumps(anyio.run(listening, url, sys.argv[3])))
    elif command == "misrouted":
        kill_pid = int(sys.argv[4]) if len(sys.argv) > 4 else None
        print(json.dumps(anyio.run(misrouted, url, sys.argv[3], kill_pid)))
    elif command == "moved":
        back = sys.argv[6:] == ["--back"]
        print(json.dumps(anyio.run(moved, url, sys.argv[3], sys.argv[4], int(sys.argv[5]), back)))
        # Dropping the session on a dead replica may raise; the report is out.
        os._exit(0)
    elif command == "bounded":
        print(json.dumps(anyio.run(bounded, url, sys.argv[3])))
    elif command == "outage":
        anyio.run(outage, url, int(sys.argv[3]))
    elif command == "hold":
        anyio.run(hold, url, int(sys.argv[3]))
