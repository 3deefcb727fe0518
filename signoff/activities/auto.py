"""Auto mode's evaluator (`signoff.auto_evaluate`): judges one waiting call against its criteria set.

Worker-side and fail-closed: it reads the tool's policy and criteria set from this worker's own
configuration (never from the run's state), asks the evaluator (a function the agent registered,
`AgentBuilder.with_auto_evaluator`, else the model through the worker's provider, model
`SIGNOFF_AUTO_MODEL`, with a strict JSON `response_format`), and answers a verdict. Every
failure is a verdict too: `escalate`, with the reason, so the call waits for a person. The
activity itself does not fail, and is not retried: a second opinion asked because the first was
slow is not a better one.

Under a `verified` policy that lists `auto:<set>`, a confident verdict is signed here with the
worker's own service key (`SIGNOFF_AUTO_SIGNING_KEY_FILE`), bound to the call as the evaluator
saw it (the digest of the arguments it judged), so the tool activity verifies it like any
person's signature and quorum still counts the people.

What the evaluator sees is what the tool would: its name and description and the call's
arguments, plus the operator's criteria. Nothing of the worker's environment.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity

from signoff.activities.agents import ServedAgents
from signoff.activities.models import AutoInput, AutoOutput
from signoff.approval import auto
from signoff.approval.auto import AutoCall, AutoVerdict
from signoff.approval.digest import arguments_digest
from signoff.approval.policy import ApprovalPolicy, CriteriaSet
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import decision_claim
from signoff.chat.base import ChatOptions
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import METRIC_AUTO_VERDICTS
from signoff.messages import ChatMessage
from signoff.metrics import DESCRIPTIONS
from signoff.signing.keys import SigningKey

AUTO_VOTE_TTL = timedelta(minutes=10)
"""How long the token that signs an auto vote is good for."""


@dataclass(frozen=True)
class AutoSettings:
    """The worker's auto mode: the evaluator's model, and the service key that signs its votes.

    Attributes:
        model: `SIGNOFF_AUTO_MODEL` (None: the agent's own model).
        signer: `SIGNOFF_AUTO_SIGNING_KEY_FILE` (None: auto mode decides no verified call).
        issuer, audience: `iss` and `aud` of its tokens, as the workers check them.
    """

    model: str | None = None
    signer: SigningKey | None = None
    issuer: str | None = None
    audience: str | None = None


async def evaluate(served: ServedAgents, settings: AutoSettings, input: AutoInput) -> AutoOutput:
    """The verdict on one waiting call, and whether it decides it (never raises)."""
    request = input.request
    policy, criteria_name, criteria, description = await _rules(served, input)
    if policy is None or policy.auto is None:
        return AutoOutput(verdict=AutoVerdict.escalate(f"{request.name} has no auto mode in this worker's policy"))
    if criteria is None:
        why = f"criteria set {criteria_name!r} is not defined (add [criteria.{criteria_name}] to the policy file)"
        return AutoOutput(criteria=criteria_name, verdict=AutoVerdict.escalate(why))
    started = time.monotonic()
    call = AutoCall(criteria_name, criteria, request.name, description, request.arguments)
    out = await _judged(served, settings, input.agent, policy, call)
    out.latency_ms = int((time.monotonic() - started) * 1000)
    out.needed = auto.bar(policy, criteria)
    if auto.settles(out.verdict, out.needed):
        out.why_not = auto.may_decide(policy) or _binding_problem(request)
        if out.why_not is None and policy.verified:
            out.token, out.why_not = _signed(settings, request, out.verdict, criteria_name)
        out.decides = out.why_not is None
    _count(out)
    return out


async def _rules(served: ServedAgents, input: AutoInput) -> tuple[ApprovalPolicy | None, str, CriteriaSet | None, str]:
    """The tool's policy as this worker configures it, its criteria set's name, the set, and the
    tool's description (the worker's, as the model was shown it: never the run's word)."""
    resolved = await served.resolve(input.agent, input.snapshot_digest) if input.snapshot_digest else None
    tool = resolved.registry.get(input.request.name) if resolved else None
    if tool is None:
        return None, "", None, ""
    policy = served.configured(input.agent, tool).policy
    name = policy.auto.criteria if policy.auto else ""
    return policy, name, served.book(input.agent).criteria.get(name), tool.description


async def _judged(
    served: ServedAgents, settings: AutoSettings, agent: str, policy: ApprovalPolicy, call: AutoCall
) -> AutoOutput:
    """Ask the evaluator, within the policy's time; a failure or a timeout escalates."""
    assert policy.auto is not None
    name = call.criteria_name
    own = served.agent(agent).auto_evaluators.get(name)
    try:
        async with asyncio.timeout(policy.auto.timeout_seconds):
            if own is not None:
                answer = own(call)
                verdict = await answer if inspect.isawaitable(answer) else answer
                return AutoOutput(criteria=name, verdict=AutoVerdict.model_validate(verdict, from_attributes=True))
            return await _asked_model(served, settings, agent, call)
    except TimeoutError:
        why = f"the evaluator did not answer within {policy.auto.timeout_seconds:g}s"
    except Exception as exc:  # the evaluator's failure is a person's call, never the run's end
        why = f"the evaluator failed: {type(exc).__name__}: {str(exc)[:500]}"
    return AutoOutput(criteria=name, verdict=AutoVerdict.escalate(why), model=settings.model)


async def _asked_model(served: ServedAgents, settings: AutoSettings, agent: str, call: AutoCall) -> AutoOutput:
    client = served.client(agent)
    options = ChatOptions(model=settings.model, temperature=0, response_format=auto.RESPONSE_FORMAT)
    shown = auto.messages(call.criteria_name, call.criteria, call.tool, call.description, call.arguments)
    response = await client.complete([ChatMessage(role=m["role"], content=m["content"]) for m in shown], [], options)
    usage = response.usage
    default = client.config.model if isinstance(client, OpenAIChatClient) else None
    return AutoOutput(
        criteria=call.criteria_name,
        verdict=auto.read_verdict(response.message.content),
        model=settings.model or default,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )


def _binding_problem(request: ToolApprovalRequest) -> str | None:
    """Why the request names another run, or other arguments than those judged (None: it does not)."""
    binding = request.binding
    if binding is None:
        return None
    if binding.workflow_id != activity.info().workflow_id:
        return "the request is bound to another workflow"
    if binding.arguments_digest != arguments_digest(request.arguments):
        return "the request's arguments_digest is not the digest of the arguments judged"
    return None


def _signed(
    settings: AutoSettings, request: ToolApprovalRequest, verdict: AutoVerdict, criteria: str
) -> tuple[str | None, str | None]:
    """The verdict as a decision signed with the worker's service key, or why it cannot be."""
    if settings.signer is None or request.binding is None:
        return None, "the worker has no auto signing key (SIGNOFF_AUTO_SIGNING_KEY_FILE) for a verified policy"
    response = ToolApprovalResponse(call_id=request.call_id, approved=verdict.verdict == "approve")
    claim = decision_claim(request.binding, response)
    token = settings.signer.sign(
        claim, auto.approver_name(criteria), ttl=AUTO_VOTE_TTL, issuer=settings.issuer, audience=settings.audience
    )
    return token, None


def _count(out: AutoOutput) -> None:
    counter = activity.metric_meter().create_counter(METRIC_AUTO_VERDICTS, DESCRIPTIONS[METRIC_AUTO_VERDICTS])
    counter.add(1, {"verdict": out.verdict.verdict})
