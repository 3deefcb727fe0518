"""signoff beside its peers on Temporal: `python -m bench.peers` (needs `pip install -e '.[peers]'`).

- `pydantic_ai_run` / `pydantic_ai_worker`: Pydantic AI's own Temporal integration
  (`pydantic_ai.durable_exec.temporal`), in the layout its docs show;
- `openai_agents_run` / `openai_agents_worker`: the OpenAI Agents SDK with Temporal's
  integration (`temporalio.openai_agents`, which `temporalio.contrib.openai_agents` forwards to);
- `side_by_side`: the bench, those two beside signoff and the floor (`bench/README.md`), with
  `systems` (one system's runs, measured), `checks` (every run checked from outside),
  `metered` (billable Actions, history against the server's count) and `tables`.

Each peer runs the bench's conversation with the bench's tools (`bench.tool_calls`) against
the same dev server and scripted model as signoff. Its worker imports neither signoff nor the
other peer.
"""
