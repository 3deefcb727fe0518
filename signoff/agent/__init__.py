"""Agents: the builder, the in-process driver, the snapshot a run starts with, the default agent."""
