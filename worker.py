"""The signoff worker: `python worker.py [--agents myapp.agents ...]` (or `signoff-worker`).

The worker lives in `runtime/worker.py` (installed as `signoff.runtime.worker`); this file
is the repository's entry point, as in Temporal's samples.
"""

from signoff.runtime.worker import main

if __name__ == "__main__":
    main()
