"""openprogram — an LLM tool-calling loop runtime.

Each round the model returns one assistant message; tool calls in it are executed in order and
their results fed back; a text-only message finishes the run.  See ``openprogram.loop``.
"""

from ._sync import run_sync
from ._version import __version__
from .approvals import ApprovalDecision, ApprovalGate, ApprovalRequest, Approve, Deny, Modify
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
    ToolApprovalEnd,
    ToolApprovalStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from .functions import Function
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
from .registry import Registry, agentic_function, default_registry, function
from .runs import Handover, PollPoint, RunInfo
from .runtime import DecisionError, NestingTooDeep, ProviderError, RunRecord, Runtime
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

__all__ = [
    "MAX_INNER_ITERATIONS",
    "AgentContext",
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentStream",
    "AgentTool",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approve",
    "AssistantMessage",
    "AssistantMessageEvent",
    "CancelToken",
    "CancelledRun",
    "Context",
    "DecisionError",
    "Deny",
    "EventStream",
    "Function",
    "Handover",
    "ImageContent",
    "LoopConfig",
    "Message",
    "MessageBuilder",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Modify",
    "NestingTooDeep",
    "PollPoint",
    "Provider",
    "ProviderError",
    "Registry",
    "RunInfo",
    "RunRecord",
    "Runtime",
    "StopReason",
    "StreamOptions",
    "Termination",
    "TextContent",
    "ThinkingContent",
    "ToolApprovalEnd",
    "ToolApprovalStart",
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
    "agentic_function",
    "as_agent_tool",
    "default_registry",
    "effective_cap",
    "function",
    "run_sync",
]
