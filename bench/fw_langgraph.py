"""LangGraph: the prebuilt ReAct agent (``create_react_agent``: model node + ``ToolNode``) on a
langchain-core ``GenericFakeChatModel`` taught ``bind_tools``.

The graph is compiled once; each run gives the fake model a fresh reply iterator that follows the
run's script.  With the sync tool the sync ``invoke`` is used: it measured faster than ``ainvoke``
here (the async path of a sync fake model and sync tool goes through executors), so LangGraph
gets its best configuration; an ``async def`` tool needs ``ainvoke``.  ``create_react_agent`` warns that it moved to ``langchain.agents``; langgraph
still ships it, and the warning is silenced.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from importlib.metadata import version as _dist_version
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

from .common import FINAL_TEXT, Script

name = "langgraph"
label = "LangGraph"

_current: list[Script] = []


def version() -> str:
    return f"{_dist_version('langgraph')} (langchain-core {_dist_version('langchain-core')})"


class ToolCallingFakeModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts ``bind_tools`` (the tools are in the script)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return _current[0].add(a, b)


def _replies(script: Script) -> Iterator[AIMessage]:
    while True:
        calls = script.next_turn()
        if calls is None:
            yield AIMessage(content=FINAL_TEXT)
            return
        yield AIMessage(
            content="",
            tool_calls=[{"name": "add", "args": {"a": c.a, "b": c.b}, "id": c.id} for c in calls],
        )


@tool("add")
async def aadd(a: int, b: int) -> int:
    """Add two integers."""
    return await _current[0].aadd(a, b)


_model = ToolCallingFakeModel(messages=iter(()))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _graph = create_react_agent(_model, [add])
    _async_graph = create_react_agent(_model, [aadd])


async def run(script: Script) -> Any:
    _current[:] = [script]
    _model.messages = _replies(script)
    config = {"recursion_limit": 2 * script.tool_rounds + 5}
    if script.tool == "sync":
        state = _graph.invoke({"messages": [("user", "go")]}, config=config)
    else:  # an async tool needs the async graph API
        state = await _async_graph.ainvoke({"messages": [("user", "go")]}, config=config)
    return state["messages"][-1].content
