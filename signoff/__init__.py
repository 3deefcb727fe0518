"""signoff: durable AI agents whose risky tool calls wait for a human's sign-off.

The core (this package) knows nothing of Temporal: build agents and tools here,
run them in process with `ChatClientAgent.run()`, or serve them durably with the
worker (`worker.py`) that drives the same loop from the `AgentRun` workflow.
"""

from signoff.agent import (
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    AgentSnapshot,
    CancellationToken,
    ChatClientAgent,
)
from signoff.approvals import ApprovalRecord, ToolApprovalRequest, ToolApprovalResponse
from signoff.chat import PRESETS, ChatClient, ChatOptions, LLMConfig, OpenAIChatClient
from signoff.contract import AgentRunInput, AgentRunResult, DecisionAck, RunOptions, RunStatus
from signoff.errors import ConfigError, ProviderError, SignoffError, StreamError, UsageError
from signoff.loop import AgentLoop, AwaitApproval, CallModel, DecisionError, Finish, RunTools
from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ChatResponse,
    DecisionIgnoredEvent,
    ErrorEvent,
    FinishEvent,
    FinishReason,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    ToolSpec,
    Usage,
)
from signoff.render import AgentResponseConverter, render_event
from signoff.tools import (
    ApprovalRequiredTool,
    ContextProvider,
    ListDir,
    ReadFile,
    RemovePath,
    RunCommand,
    ScopePolicy,
    Tool,
    ToolRegistry,
    ToolResult,
    WorkspaceContextProvider,
    WorkspaceScope,
    WriteFile,
    default_tools,
    tool,
)

__all__ = [
    "AgentBuilder", "AgentEvent", "AgentLoop", "AgentResponseConverter", "AgentRunInput", "AgentRunOptions",
    "AgentRunResult", "AgentSession", "AgentSnapshot", "ApprovalDecisionEvent", "ApprovalRecord",
    "ApprovalRequestEvent", "ApprovalRequiredTool", "AwaitApproval", "CallModel", "CancellationToken",
    "ChatClient", "ChatClientAgent", "ChatMessage", "ChatOptions", "ChatResponse", "ConfigError",
    "ContextProvider", "DecisionAck", "DecisionError", "DecisionIgnoredEvent", "ErrorEvent", "Finish",
    "FinishEvent", "FinishReason", "LLMConfig", "ListDir", "OpenAIChatClient", "PRESETS", "ProviderError",
    "ReadFile", "RemovePath", "RunCommand", "RunOptions", "RunStatus", "RunTools", "ScopePolicy",
    "SignoffError", "StreamError", "TextEvent", "Tool", "ToolApprovalRequest", "ToolApprovalResponse",
    "ToolCall", "ToolCallEvent", "ToolRegistry", "ToolResult", "ToolResultEvent", "ToolSpec", "Usage",
    "UsageError", "WorkspaceContextProvider", "WorkspaceScope", "WriteFile", "default_tools", "render_event",
    "tool",
]  # fmt: skip
