"""openprogram — an LLM tool-calling loop runtime.

Each round the model returns one assistant message; tool calls in it are executed in order and
their results fed back; a text-only message finishes the run.  See ``openprogram.loop``.
"""

from .cancel import CancelledRun, CancelToken
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    AssistantMessageEvent,
    EventStream,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from .loop import (
    MAX_INNER_ITERATIONS,
    AgentContext,
    AgentStream,
    LoopConfig,
    agent_loop,
    agent_loop_continue,
    effective_cap,
)
from .providers.base import Context, MessageBuilder, Provider, StreamOptions
from .tools import AgentTool, ToolError, ToolResult, as_agent_tool
from .types import (
    AssistantMessage,
    ImageContent,
    Message,
    StopReason,
    Termination,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

__version__ = "0.1.0"

__all__ = [
    "MAX_INNER_ITERATIONS",
    "AgentContext",
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentStream",
    "AgentTool",
    "AssistantMessage",
    "AssistantMessageEvent",
    "CancelToken",
    "CancelledRun",
    "Context",
    "EventStream",
    "ImageContent",
    "LoopConfig",
    "Message",
    "MessageBuilder",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Provider",
    "StopReason",
    "StreamOptions",
    "Termination",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolError",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResult",
    "ToolResultMessage",
    "ToolSpec",
    "TurnEnd",
    "TurnStart",
    "Usage",
    "UserMessage",
    "__version__",
    "agent_loop",
    "agent_loop_continue",
    "as_agent_tool",
    "effective_cap",
]
