"""What a signer signs: the `signoff` claim derived from what it shows and what the server says.

A pending request's `binding` is the run's word, and whoever completes a run's workflow tasks
(an attacker's own workflow *named* `AgentRun`, on a task queue of their own) chooses it: it
could show `echo harmless` and report the binding of another run's `rm -rf`. So every signer
(the inbox, `signoff approve/deny/extend/sign`, `signed_decision`) builds the claim from facts
it checks itself (CONTRACT v4 "Signing what is shown"):

- `workflow_id`: the run the signer addresses (and the server describes);
- `chain_id`: the server's `first_run_id` of that run (DescribeWorkflowExecution), never the
  run's word;
- `call_id` and `tool`: the call it shows;
- `arguments_digest`: computed here from the arguments it shows (canonical JSON);
- `request`: the request instance, as the run reports it. It is the one field the signer
  cannot check, and need not: it only tells two requests of one call apart, and a lying run
  can only make a token for its own workflow and chain worthless.

Where the run's `binding` differs from any of these, or the run is not an `AgentRun` on a task
queue your workers serve (`ServedRuns`), the signer refuses (`SigningRefused`) and says why.
Pure: the facts come from the client layer (`signoff.operator.run_client.run_facts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.approval.digest import arguments_digest
from signoff.approval.requests import Binding, ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import DecisionClaim, ExtensionClaim, decision_claim, extension_claim
from signoff.config.environment import SERVED_TASK_QUEUES_ENV, TASK_QUEUE_ENV, Environment
from signoff.contract import DEFAULT_TASK_QUEUE, WORKFLOW_TYPE
from signoff.errors import SigningRefused

ANY_QUEUE = "*"
MISMATCH = "this run's request does not match what it shows"


@dataclass(frozen=True)
class RunFacts:
    """What the server says of the run a signer addresses (DescribeWorkflowExecution).

    Attributes:
        workflow_id: the run's workflow id.
        chain_id: the first run of its continue-as-new chain (`first_run_id`).
        workflow_type: its workflow type (`AgentRun` for signoff's runs).
        task_queue: the task queue its workflow tasks go to.
        parent_id: the run that started it as a child (a sub-agent's run); None: a top run.
    """

    workflow_id: str
    chain_id: str
    workflow_type: str
    task_queue: str
    parent_id: str | None = None

    def describe(self) -> str:
        """`AgentRun on task queue 'signoff', chain 0190...`."""
        return f"{self.workflow_type} on task queue {self.task_queue!r}, chain {self.chain_id}"


@dataclass(frozen=True)
class ServedRuns:
    """The runs a signer signs for: `AgentRun`s on the task queues your workers serve.

    Attributes:
        task_queues: the queues (`SIGNOFF_SERVED_TASK_QUEUES`, default `SIGNOFF_TASK_QUEUE`);
            `*` among them: any queue.
    """

    task_queues: tuple[str, ...] = (DEFAULT_TASK_QUEUE,)

    @classmethod
    def from_env(cls, env: Environment) -> ServedRuns:
        """`SIGNOFF_SERVED_TASK_QUEUES`, else `SIGNOFF_TASK_QUEUE`, else the contract's `signoff`."""
        queue = env.read(TASK_QUEUE_ENV)
        return cls(env.read(SERVED_TASK_QUEUES_ENV) or ((queue,) if queue else (DEFAULT_TASK_QUEUE,)))

    def problem(self, run: RunFacts) -> str | None:
        """Why a signer does not sign for `run` (None: it does)."""
        if run.workflow_type != WORKFLOW_TYPE:
            return f"run {run.workflow_id!r} is a {run.workflow_type!r}, not an {WORKFLOW_TYPE}: nothing signed"
        if ANY_QUEUE in self.task_queues or run.task_queue in self.task_queues:
            return None
        served = ", ".join(repr(q) for q in self.task_queues)
        return (
            f"run {run.workflow_id!r} is on task queue {run.task_queue!r}, which is not one your workers serve "
            f"({served}; SIGNOFF_SERVED_TASK_QUEUES): nothing signed"
        )


def derived_binding(run: RunFacts, request: ToolApprovalRequest, served: ServedRuns | None = None) -> Binding:
    """The binding a signer signs for `request` as shown, in `run` as the server describes it.

    Args:
        served: which runs to sign for (default: `AgentRun`s on the `signoff` task queue).

    Raises:
        SigningRefused: the run is not one served, the request names no binding, or its
            binding differs from what is shown and what the server says (each field named).
    """
    if (problem := (served or ServedRuns()).problem(run)) is not None:
        raise SigningRefused(problem)
    if request.binding is None:
        raise SigningRefused(
            f"call {request.call_id!r} names no binding to sign (a worker older than signed decisions asked for it)"
        )
    reported = request.binding
    derived = Binding(
        workflow_id=run.workflow_id,
        chain_id=run.chain_id,
        call_id=request.call_id,
        tool=request.name,
        arguments_digest=arguments_digest(request.arguments),
        request=reported.request,
        state_digest=reported.state_digest,  # the server's state is not shown: its digest is as the run reports it
    )
    differences = _differences(reported, derived, request.arguments_digest)
    if differences:
        raise SigningRefused(f"{MISMATCH}: " + "; ".join(differences) + ". Nothing signed")
    return derived


def _differences(reported: Binding, derived: Binding, digest: str) -> list[str]:
    said = [
        (reported.workflow_id, derived.workflow_id, "its binding names workflow {}, and it is run {}"),
        (reported.chain_id, derived.chain_id, "its binding names chain {}, the server says {}"),
        (reported.call_id, derived.call_id, "its binding names call {}, it shows call {}"),
        (reported.tool, derived.tool, "its binding names tool {}, it shows {}"),
        (reported.arguments_digest, derived.arguments_digest, "its binding names arguments digest {}, the "
         "arguments it shows digest to {}"),
        (digest, derived.arguments_digest, "its arguments_digest is {}, the arguments it shows digest to {}"),
    ]  # fmt: skip
    return [text.format(repr(given), repr(true)) for given, true, text in said if given != true]


def decision_claim_for(
    run: RunFacts, request: ToolApprovalRequest, response: ToolApprovalResponse, served: ServedRuns | None = None
) -> DecisionClaim:
    """The claim that signs `response` on `request` as shown, in `run` as the server says.

    Raises:
        SigningRefused: as `derived_binding`, or the response names a digest other than the
            one of the arguments shown (the call is not what the person was shown).
    """
    binding = derived_binding(run, request, served)
    if response.call_id != request.call_id:
        raise SigningRefused(f"the decision is for call {response.call_id!r}, not {request.call_id!r}: nothing signed")
    if response.arguments_digest not in (None, binding.arguments_digest):
        raise SigningRefused(
            f"call {request.call_id!r} is not what you were shown: its arguments digest to "
            f"{binding.arguments_digest}, you saw {response.arguments_digest}. Nothing signed"
        )
    return decision_claim(binding, response)


def extension_claim_for(
    run: RunFacts, request: ToolApprovalRequest, seconds: float, served: ServedRuns | None = None
) -> ExtensionClaim:
    """The claim that signs moving `request`'s deadline by `seconds`, derived as `derived_binding`.

    Raises:
        SigningRefused: as `derived_binding`.
    """
    return extension_claim(derived_binding(run, request, served), seconds)


__all__ = [
    "ANY_QUEUE",
    "MISMATCH",
    "RunFacts",
    "ServedRuns",
    "decision_claim_for",
    "derived_binding",
    "extension_claim_for",
]
