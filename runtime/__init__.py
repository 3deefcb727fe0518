"""How signoff runs on Temporal: connecting (`connection`), the worker, the embedded dev
server (`devserver`) and where large payloads live (`storage`: `filestore`, `s3store`).

Lives in the repository's `runtime/` folder and is installed as `signoff.runtime`; the
core (`signoff`) knows nothing of it.
"""
