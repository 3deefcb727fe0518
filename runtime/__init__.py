"""How signoff runs on Temporal: connecting, the worker, and the embedded dev server.

Lives in the repository's `runtime/` folder and is installed as `signoff.runtime`; the
core (`signoff`) knows nothing of it.
"""
