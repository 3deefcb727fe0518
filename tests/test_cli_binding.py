"""Which calls `approve`/`deny` decide, and the record of what the operator was shown (pure parts)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from signoff.approval.digest import arguments_digest
from signoff.approval.requests import ToolApprovalRequest
from signoff.cli.binding import CallToDecide, CannotDecide, Plan, digest_text, plan
from signoff.cli.shown import MAX_AGE, MAX_ENTRIES, ShownCalls, state_dir
from signoff.config.environment import Environment


def call(call_id: str, command: str) -> ToolApprovalRequest:
    arguments = {"command": command}
    return ToolApprovalRequest(
        call_id=call_id, name="run_command", arguments=arguments, arguments_digest=arguments_digest(arguments)
    )


ECHO, RM = call("call_1", "echo hello"), call("call_1", "rm -rf data")
OTHER = call("call_2", "ls")


def test_a_shown_call_is_decided_with_the_digest_that_was_shown_even_if_it_changed() -> None:
    shown = {"call_1": ECHO.arguments_digest}
    for chosen in (plan("r", [RM], shown), plan("r", [RM], shown, every=True), plan("r", [RM], shown, "call_1")):
        assert chosen.targets == [CallToDecide("call_1", ECHO.arguments_digest, RM, "shown")]  # the run refuses it


def test_the_only_call_not_shown_before_is_not_decided_unseen() -> None:
    assert plan("r", [RM], {}) == Plan(unseen=[RM], mode="only")


def test_all_decides_exactly_the_shown_calls_and_lists_the_others() -> None:
    chosen = plan("r", [ECHO, OTHER], {"call_2": OTHER.arguments_digest}, every=True)
    assert chosen == Plan([CallToDecide("call_2", OTHER.arguments_digest, OTHER, "shown")], [ECHO], "all")


def test_a_named_call_not_shown_is_printed_then_decided() -> None:
    assert plan("r", [ECHO, OTHER], {}, "call_2") == Plan(unseen=[OTHER], mode="named")


def test_several_pending_calls_need_a_name_and_are_shown() -> None:
    with pytest.raises(CannotDecide) as refused:
        plan("r", [ECHO, OTHER], {})
    assert refused.value.code == 2 and refused.value.show == [ECHO, OTHER]


def test_a_digest_prefix_binds_the_call_it_names() -> None:
    prefix = OTHER.arguments_digest[:16]
    assert plan("r", [ECHO, OTHER], {}, digest=prefix).targets == [
        CallToDecide("call_2", OTHER.arguments_digest, OTHER, "given")
    ]
    assert plan("r", [ECHO, OTHER], {}, "call_2", digest=prefix).targets[0].digest == OTHER.arguments_digest


def test_a_digest_that_does_not_match_decides_nothing() -> None:
    with pytest.raises(CannotDecide) as refused:
        plan("r", [RM], {}, "call_1", digest=ECHO.arguments_digest[:16])
    assert RM.arguments_digest in str(refused.value) and refused.value.show == [RM]
    with pytest.raises(CannotDecide):
        plan("r", [RM], {}, digest=ECHO.arguments_digest[:16])


def test_a_whole_digest_is_sent_for_the_run_to_judge() -> None:
    assert plan("r", [RM], {}, "call_1", digest=ECHO.arguments_digest).targets[0].digest == ECHO.arguments_digest


def test_unknown_calls_and_empty_runs_are_refused() -> None:
    with pytest.raises(CannotDecide, match="pending call ids: call_1"):
        plan("r", [ECHO], {}, "nope")
    with pytest.raises(CannotDecide, match="no tool call is awaiting approval"):
        plan("r", [], {}, every=True)


@pytest.mark.parametrize("text", ["abc", "0123456", "g" * 8, "0" * 65, ""])
def test_digest_text_refuses_what_cannot_bind(text: str) -> None:
    with pytest.raises(ValueError):
        digest_text(text)


def test_digest_text_takes_prefixes_and_upper_case() -> None:
    assert digest_text(" ABCDEF0123456789 ") == "abcdef0123456789"
    with pytest.raises(ValueError, match="16"):
        digest_text("abcdef01")  # 32 bits: arguments with this prefix are found in minutes


# --- the record of what was shown ----------------------------------------------------


def test_shown_calls_are_remembered_per_server_namespace_run_and_call(tmp_path: Path) -> None:
    here = ShownCalls("h:7233", "default", tmp_path)
    here.record("run-1", [ECHO, OTHER])
    assert here.digest("run-1", "call_1") == ECHO.arguments_digest
    assert here.digests("run-1") == {"call_1": ECHO.arguments_digest, "call_2": OTHER.arguments_digest}
    assert ShownCalls("h:7233", "prod", tmp_path).digests("run-1") == {}
    assert ShownCalls("other:7233", "default", tmp_path).digest("run-1", "call_1") is None
    here.record("run-1", [RM])  # shown again, changed: the newest is what the operator saw
    assert here.digest("run-1", "call_1") == RM.arguments_digest


def test_the_record_is_the_owners_alone(tmp_path: Path) -> None:
    store = ShownCalls("h", "d", tmp_path / "state" / "signoff")
    store.record("run-1", [ECHO])
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in store.path.parent.iterdir() if p.name.startswith(".shown-")] == []  # no temporary left


def test_a_record_others_can_write_is_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ShownCalls("h", "d", tmp_path)
    store.record("run-1", [ECHO])
    os.chmod(store.path, 0o666)
    assert store.digest("run-1", "call_1") is None
    assert "writable by you alone" in capsys.readouterr().err


def test_a_corrupt_record_counts_as_nothing_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ShownCalls("h", "d", tmp_path)
    store.path.write_text("{not json")
    os.chmod(store.path, 0o600)
    assert store.digest("run-1", "call_1") is None
    store.record("run-1", [ECHO])  # and it is replaced by a good one
    assert store.digest("run-1", "call_1") == ECHO.arguments_digest
    assert "cannot read" in capsys.readouterr().err


def test_an_unwritable_state_directory_is_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = ShownCalls("h", "d", blocker / "signoff")  # its parent is a file
    store.record("run-1", [ECHO])
    assert store.digest("run-1", "call_1") is None
    assert "cannot record what was shown" in capsys.readouterr().err


def test_old_entries_are_dropped_and_the_record_is_bounded(tmp_path: Path) -> None:
    clock = [1_000_000.0]
    store = ShownCalls("h", "d", tmp_path, clock=lambda: clock[0])
    store.record("old", [ECHO])
    clock[0] += MAX_AGE + 1
    store.record("new", [call(f"c{i}", "ls") for i in range(MAX_ENTRIES + 10)])
    entries = json.loads(store.path.read_text())["shown"]
    assert len(entries) == MAX_ENTRIES
    assert store.digest("old", "call_1") is None


def test_state_dir_follows_xdg_state_home(tmp_path: Path) -> None:
    assert state_dir(Environment({"XDG_STATE_HOME": str(tmp_path)})) == tmp_path / "signoff"
    assert (
        state_dir(Environment({"XDG_STATE_HOME": "relative/ignored"})) == Path.home() / ".local" / "state" / "signoff"
    )
