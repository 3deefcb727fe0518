"""signoff: durable AI agents whose risky tool calls wait for a human's sign-off.

What this module exports is the core API, and importing it loads neither Temporal nor the
terminal: build agents, tools and approval policies here, run them in process with
`ChatClientAgent.run()`, or serve them durably with the worker (`signoff.runtime.worker`,
`python worker.py`), which drives the same loop from the `AgentRun` workflow
(`signoff.workflows`). The CLI is `signoff.cli`; the manual is docs/.
"""

from signoff.agent.builder import AgentBuilder, AgentDefinition, ChatClientAgent
from signoff.agent.session import AgentRunOptions, AgentSession, CancellationToken
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.identity import ApproverKeys, Identity, issue_token
from signoff.approval.policy import ApprovalPolicy, OnTimeout, PolicyBook
from signoff.approval.requests import (
    ApprovalRecord,
    Binding,
    Grant,
    GrantSpec,
    ToolApprovalRequest,
    ToolApprovalResponse,
    Vote,
)
from signoff.chat import PRESETS, ChatClient, ChatOptions, LLMConfig, OpenAIChatClient
from signoff.contract import AgentRunInput, AgentRunResult, DecisionAck, RunOptions, RunStatus
from signoff.errors import (
    ConfigError,
    DecisionError,
    ProviderError,
    RunFailedError,
    SigningRefused,
    SignoffError,
    StreamError,
    TokenError,
    UsageError,
)
from signoff.loop.agent_loop import AgentLoop, AwaitApproval, CallModel, Fail, Finish, RunTools
from signoff.loop.limits import Limits
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
    MCPUnavailableEvent,
    SubAgentEvent,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    ToolSpec,
    Usage,
)
from signoff.signing.derived import RunFacts, ServedRuns
from signoff.signing.keys import SigningKey, new_key_pair, signed_decision
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
from signoff.tools.mcp import MCPServer, MCPTool
from signoff.views.render import AgentResponseConverter, render_event

AgentSnapshot = AgentDefinition
"""`AgentDefinition`'s earlier name (a public name, kept): "snapshot" now means only
`RunSnapshot`, what a run records of its agent."""

__all__ = [
    "PRESETS",
    "AgentBuilder",
    "AgentDefinition",
    "AgentEvent",
    "AgentLoop",
    "AgentResponseConverter",
    "AgentRunInput",
    "AgentRunOptions",
    "AgentRunResult",
    "AgentSession",
    "AgentSnapshot",
    "ApprovalDecisionEvent",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequestEvent",
    "ApprovalRequiredTool",
    "ApproverKeys",
    "AwaitApproval",
    "Binding",
    "CallModel",
    "CancellationToken",
    "ChatClient",
    "ChatClientAgent",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ConfigError",
    "ContextProvider",
    "DecisionAck",
    "DecisionError",
    "DecisionIgnoredEvent",
    "ErrorEvent",
    "Fail",
    "Finish",
    "FinishEvent",
    "FinishReason",
    "Grant",
    "GrantSpec",
    "Identity",
    "LLMConfig",
    "Limits",
    "ListDir",
    "MCPServer",
    "MCPTool",
    "MCPUnavailableEvent",
    "OnTimeout",
    "OpenAIChatClient",
    "PolicyBook",
    "ProviderError",
    "ReadFile",
    "RemovePath",
    "RunCommand",
    "RunFacts",
    "RunFailedError",
    "RunOptions",
    "RunSnapshot",
    "RunStatus",
    "RunTools",
    "ScopePolicy",
    "ServedRuns",
    "SigningKey",
    "SigningRefused",
    "SignoffError",
    "StreamError",
    "SubAgentEvent",
    "TextEvent",
    "TokenError",
    "Tool",
    "ToolApprovalRequest",
    "ToolApprovalResponse",
    "ToolCall",
    "ToolCallEvent",
    "ToolRegistry",
    "ToolResult",
    "ToolResultEvent",
    "ToolSpec",
    "Usage",
    "UsageError",
    "Vote",
    "WorkspaceContextProvider",
    "WorkspaceScope",
    "WriteFile",
    "default_tools",
    "issue_token",
    "new_key_pair",
    "render_event",
    "signed_decision",
    "tool",
]
