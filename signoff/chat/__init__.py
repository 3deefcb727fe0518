"""Talking to the model: the `ChatClient` protocol and the OpenAI-compatible client."""

from signoff.chat.base import ChatClient, ChatOptions, OnText
from signoff.chat.config import PRESETS, LLMConfig
from signoff.chat.openai import OpenAIChatClient

__all__ = ["PRESETS", "ChatClient", "ChatOptions", "LLMConfig", "OnText", "OpenAIChatClient"]
