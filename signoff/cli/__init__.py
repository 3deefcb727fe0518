"""The `signoff` command line: a Temporal client for operators (run, pending, approve, deny, ...).

Lives in the repository's `cli/` folder and is installed as `signoff.cli`; the core
(`signoff`) knows nothing of it.
"""
