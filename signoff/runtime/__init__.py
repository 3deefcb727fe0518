"""How signoff runs on Temporal: connecting (`connection`), the worker, the embedded dev
server (`devserver`), where large payloads live (`storage`: `filestore`, `s3store`) and
what a worker makes of a payload it cannot resolve (`guard`).

Lives in the repository's `runtime/` folder and is installed as `signoff.runtime`; the
core (`signoff`) knows nothing of it.
"""
