"""A worker's configuration, in one place.

- `environment.py`: `Environment`, the one reader of the process environment: every variable
  signoff reads, its name, its default and its parsing, with the error that says what to do.
- `secrets.py`: the one registry of secret files, which the file tools' guard reads too.
- `settings.py`: `WorkerSettings`, what a worker is configured with, read and checked once at
  start; the worker, its activities and (its connection part) the CLI read from it.
- `smallfile.py`: reading a secret file without being stalled by what sits at its path.

`environment.py`, `secrets.py` and `smallfile.py` are the core's (no Temporal); `settings.py`
holds the Temporal side's own types and only the Temporal side imports it.
"""
