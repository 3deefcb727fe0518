"""`python -m signoff.testing [--host H] [--port N]`: serve `demo_script` until killed."""

from __future__ import annotations

import argparse
import threading

from signoff.testing.demo import demo_script
from signoff.testing.server import ScriptedModelServer


def main(argv: list[str] | None = None) -> None:
    """Serve `demo_script` until interrupted; prints the base URL first."""
    parser = argparse.ArgumentParser(prog="python -m signoff.testing", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with ScriptedModelServer(demo_script, host=args.host, port=args.port) as server:
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
