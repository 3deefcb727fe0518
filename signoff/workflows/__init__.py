"""The durable run: `AgentRun` (`agent_run.py`), the workflow every agent run is.

Imported as `signoff.workflows` only (README, "Layout").
"""

if __name__ != "signoff.workflows":  # the repository's top-level `workflows/` is a link to this folder
    raise ImportError(
        f"import signoff.workflows, not {__name__}: the top-level `workflows/` is a link to signoff/workflows/ "
        "(the layout of Temporal's samples), and importing it by another name would load a second copy"
    )
