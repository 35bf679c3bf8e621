"""The floor: the least a tool loop can do in Python.

A plain loop over dict messages: the fake model answers from the script with OpenAI-style
tool calls (arguments as JSON text), the loop parses the arguments, calls the tool directly and
appends a tool message.  No events, no validation, no types; nothing can be faster and still be
a loop, so it is what every framework's overhead is measured against.
"""

from __future__ import annotations

import json
import platform
from typing import Any

from .common import FINAL_TEXT, Script

name = "floor"
label = "bare Python (floor)"


def version() -> str:
    return f"Python {platform.python_version()}"


def _model(script: Script, messages: list[dict[str, Any]]) -> dict[str, Any]:
    calls = script.next_turn()
    if calls is None:
        return {"role": "assistant", "content": FINAL_TEXT}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.id, "name": "add", "arguments": json.dumps({"a": c.a, "b": c.b})}
            for c in calls
        ],
    }


async def run(script: Script) -> Any:
    sync = script.tool == "sync"
    tools = {"add": script.add if sync else script.aadd}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    while True:
        reply = _model(script, messages)
        messages.append(reply)
        calls = reply.get("tool_calls")
        if not calls:
            return reply["content"]
        for c in calls:
            result = tools[c["name"]](**json.loads(c["arguments"]))
            if not sync:
                result = await result
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": str(result)})
