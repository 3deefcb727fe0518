"""The operator CLI: `python client.py COMMAND ...` (installed as the `signoff` command).

The CLI lives in `cli/` (installed as `signoff.cli`); this file is the repository's
entry point, as in Temporal's samples.
"""

from signoff.cli.main import main

if __name__ == "__main__":
    main()
