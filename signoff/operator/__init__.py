"""The operator's client, shared by the CLI and the inbox: a run's typed queries and updates,
what the server says of a run, the runs that wait, and edited arguments checked before they go.

Modules: `run_client` (one run, typed: queries, updates, the decisions signal, the server's
facts), `waiting` (the runs that wait, asked a few at once), `edits` (edits against the tool's schema).
"""
