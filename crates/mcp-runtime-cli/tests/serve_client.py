"""An MCP client of the official Python SDK in front of `mcp-runtime serve`.

    python serve_client.py MODE BINARY CONFIG [SLOW_LOG]

MODE is the SDK client's protocol mode (`legacy`, `2026-07-28`). The client answers
the servers' questions (elicitation, sampling, roots: as requests under `legacy`, in
its calls' input-required results under 2026-07-28) and calls the tools that ask
them. Under `legacy` it sets the log level to `warning` before its first call,
reporting the log messages heard before that call returned. Starts BINARY
`serve --config CONFIG` as a stdio server, lists its tools, calls `mcp__up__echo`
(asking for its progress),
a tool of a server that failed to start and an unknown tool, lists the resources and
reads one, subscribes to it and waits for its update (`resources/subscribe`, or a
listen stream under 2026-07-28) after `bump`, reads a URI nobody lists, and prints what it got as one JSON object. With
SLOW_LOG (the message log of the server `slow`, whose calls never end), also adds a
tool to `up` and waits for the list change (a notification, or an event of a listen
stream under 2026-07-28), then cancels a call to `slow` once the log shows it arrived
and waits for the log to show the cancellation.
"""
import json
import sys

import anyio
from mcp import Client, types
from serve_common import logged, wait_until
from mcp.client.stdio import StdioServerParameters


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "gateway client", "count": 7})


async def on_sample(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by the client"),
        model="client-model",
    )


async def on_roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///client/root", name="client root")])


async def main(mode, binary, config, slow_log=None):
    server = StdioServerParameters(command=binary, args=["serve", "--config", config])
    report = {}
    changes = []

    async def on_message(message):
        method = getattr(getattr(message, "root", message), "method", None)
        if method is not None:
            changes.append(method)

    logs = []

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    # Either era's client answers the servers' questions and hears their logs: a
    # handshake-era one at the level it sets, a 2026-07-28 one at the level each of
    # its requests asks for.
    questions = {
        "elicitation_callback": on_elicit,
        "sampling_callback": on_sample,
        "list_roots_callback": on_roots,
        "logging_callback": on_log,
    }
    if mode != "legacy":
        questions["log_level"] = "warning"
    async with Client(server, mode=mode, message_handler=on_message, **questions) as client:
        if mode == "legacy":
            report["instructions"] = client.instructions
        else:
            # A client of this mode assumes the revision without asking: asked here.
            report["instructions"] = (await client.session.send_discover("2026-07-28")).get("instructions")
        listed = await client.list_tools()
        report["tools"] = sorted(tool.name for tool in listed.tools)
        progress = []

        async def on_progress(done, total, message):
            progress.append([done, total])

        if mode == "legacy":
            await client.set_logging_level("warning")
        echo = await client.call_tool("mcp__up__echo", {"text": "hi"}, progress_callback=on_progress)
        report["logs"] = list(logs)
        report["echo"] = {"is_error": bool(echo.is_error), "structured": echo.structured_content}
        report["progress"] = progress
        down = await client.call_tool("mcp__down__anything", {})
        report["down"] = {
            "is_error": bool(down.is_error),
            "text": " ".join(block.text for block in down.content if block.type == "text"),
        }
        asked = {}
        for tool in ("ask", "sample", "roots"):
            result = await client.call_tool(f"mcp__up__{tool}", {})
            asked[tool] = result.structured_content
        report["asked"] = asked
        # A tool its server runs as a task: the gateway polls it, and the task's
        # question reaches this client like any other.
        task = await client.call_tool("mcp__up__task_job", {"ms": 20, "poll_ms": 10, "ask": True})
        report["task"] = task.structured_content
        resources = await client.list_resources()
        report["resources"] = sorted(str(resource.uri) for resource in resources.resources)
        read = await client.read_resource("fixture://counter")
        report["counter"] = [getattr(content, "text", None) for content in read.contents]
        # A subscribed resource's update reaches the client.
        if mode == "legacy":
            await client.subscribe_resource("fixture://counter")
            await client.call_tool("mcp__up__bump", {})
            report["updated"] = await wait_until(
                lambda: "notifications/resources/updated" in changes, True
            )
        else:
            async with client.listen(resource_subscriptions=["fixture://counter"]) as subscription:
                events = subscription.__aiter__()
                with anyio.fail_after(20):
                    # The first says the subscription is in place (the resource may
                    # have changed meanwhile), the second is the bump's.
                    await events.__anext__()
                    await client.call_tool("mcp__up__bump", {})
                    await events.__anext__()
                report["updated"] = True
        try:
            await client.read_resource("fixture://nothing")
            report["no_resource"] = "answered"
        except Exception as error:
            report["no_resource"] = str(error)
        try:
            await client.call_tool("mcp__up__ech0", {})
            report["unknown"] = "answered"
        except Exception as error:  # the SDK raises the JSON-RPC error
            report["unknown"] = str(error)
        if slow_log is not None:
            if mode == "legacy":
                await client.call_tool("mcp__up__add_tool", {"name": "added"})
                report["changed"] = await wait_until(
                    lambda: "notifications/tools/list_changed" in changes, True
                )
            else:
                # A 2026-07-28 client hears of changes on a listen stream.
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("mcp__up__add_tool", {"name": "added"})
                    with anyio.fail_after(20):
                        async for _event in subscription:
                            report["changed"] = True
                            break
            listed = await client.list_tools()
            report["added"] = "mcp__up__added" in [tool.name for tool in listed.tools]
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "mcp__slow__echo", {"text": "never"})
                await wait_until(lambda: logged(slow_log, "tools/call") == 1, None)
                group.cancel_scope.cancel()
            report["cancelled"] = await wait_until(
                lambda: logged(slow_log, "notifications/cancelled") == 1, True
            )
    print(json.dumps(report))


anyio.run(main, *sys.argv[1:])
