"""The environment's variables and the secret files they name, at the bottom of the layers.

- `environment.py`: the table of declared variables (`Variable`: name, default, parser, the
  module that owns it, a line of doc; `VARIABLES`), and `Environment`, the one reader of the
  process environment (`env.read(VARIABLE)`). The manual's tables of variables are generated
  from it (`python -m tests.test_env_table`).
- `secrets.py`: the secret files, the variables declared with `secret=`; the file tools'
  guard reads them.
- `smallfile.py`: reading a secret file without being stalled by what sits at its path.

All three are the core's (no Temporal). What a worker builds from the variables (limits,
policies, approver keys, the state key...) is `signoff.runtime.settings`'.
"""
