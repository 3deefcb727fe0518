"""The default agent: a careful operator with the workspace's file tools and a shell."""

from __future__ import annotations

from signoff.agent import AgentBuilder, ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.tools.context import WorkspaceContextProvider
from signoff.tools.scope import WorkspaceScope

DEFAULT_AGENT = "default"
DEFAULT_INSTRUCTIONS = (
    "You are a careful operations assistant. Use the tools to inspect and change the "
    "workspace. Some calls need a person's approval; when one is rejected, read the reason, "
    "do not retry the same call, and adapt or explain."
)


def default_agent(scope: WorkspaceScope | None = None, chat_client: ChatClient | None = None) -> ChatClientAgent:
    """The agent named `default`: run_command (always approved by a person) and file tools.

    Args:
        scope: the workspace and its policy; from `SIGNOFF_WORKSPACE` and
            `SIGNOFF_SCOPE_POLICY` when omitted.
        chat_client: None lets the worker supply its configured provider.
    """
    provider = WorkspaceContextProvider.with_default_tools(scope or WorkspaceScope.from_env())
    builder = AgentBuilder(DEFAULT_AGENT).with_instructions(DEFAULT_INSTRUCTIONS).with_context_provider(provider)
    if chat_client is not None:
        builder = builder.with_chat_client(chat_client)
    return builder.build()
