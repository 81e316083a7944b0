"""An MCP client of the official Python SDK reading prompts through `mcp-runtime serve`.

    python serve_prompts_client.py MODE NAMES BINARY CONFIG

Starts BINARY `serve --config CONFIG` (whose server `every` is server-everything) on
stdio, lists the prompts, gets `args-prompt`, asks for completions of a prompt
argument and of a resource template argument, and tries an unknown prompt; prints
what it got as one JSON object. NAMES is the config's `tool_names`: the prompts are
called by their qualified names (`mcp__every__args_prompt`) or their own.
"""
import json
import sys

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


async def main(mode, names, binary, config):
    def name(own):
        return f"mcp__every__{own.replace('-', '_')}" if names == "qualified" else own

    server = StdioServerParameters(command=binary, args=["serve", "--config", config])
    report = {}
    async with Client(server, mode=mode) as client:
        listed = await client.list_prompts()
        report["prompts"] = sorted(prompt.name for prompt in listed.prompts)
        got = await client.get_prompt(name("args-prompt"), {"city": "Paris"})
        report["got"] = [message.content.text for message in got.messages]
        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name=name("completable-prompt")),
            {"name": "department", "value": "E"},
        )
        report["prompt_completion"] = completed.completion.values
        templates = await client.list_resource_templates()
        template = templates.resource_templates[0].uri_template
        completed = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri=template),
            {"name": "resourceId", "value": "1"},
        )
        report["template_completion"] = completed.completion.values
        try:
            await client.get_prompt(name("nothing"), {})
            report["unknown"] = "answered"
        except Exception as error:
            report["unknown"] = str(error)
    print(json.dumps(report))


anyio.run(main, *sys.argv[1:])
