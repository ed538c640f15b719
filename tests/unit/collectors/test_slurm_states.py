"""Slurm's words (job states, exit codes, node states, hostlists) in contract terms, checked
against what Slurm's own docs and commands print (tests/fixtures/realworld/slurm/)."""

from pathlib import Path

import pytest

from collectors.watchers.slurm.states import exit_of, expand, job_state, node_state, number
from schemas.events.jobs import JobState
from schemas.events.nodes import SchedulerNodeState
from schemas.slurm import SLURM_FINISHED, SLURM_JOB_STATES, slurm_job_word

SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm"
VERSIONS = ("22.05", "23.11", "24.11")
TERMINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED}


def documented_states(version: str) -> list[str]:
    lines = (SLURM / version / "job-state-codes.txt").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_documented_job_state_is_mapped_on_purpose(version: str) -> None:
    documented = documented_states(version)
    assert len(documented) == 24
    assert sorted(documented) == sorted(SLURM_JOB_STATES)
    for word in documented:
        meaning = SLURM_JOB_STATES[word]
        assert meaning.state != JobState.UNKNOWN and meaning.why
        # A requeue ends the attempt while the job waits for its next one.
        assert not (meaning.requeue and meaning.state in TERMINAL)


# Which words end an attempt, and as what: the decisions rules rely on (preemption is no failure).
@pytest.mark.parametrize(
    ("word", "state", "finished"),
    [
        ("COMPLETED", JobState.SUCCEEDED, True),
        ("FAILED", JobState.FAILED, True),
        ("NODE_FAIL", JobState.FAILED, True),
        ("BOOT_FAIL", JobState.FAILED, True),
        ("OUT_OF_MEMORY", JobState.FAILED, True),
        ("TIMEOUT", JobState.FAILED, True),
        ("DEADLINE", JobState.FAILED, True),
        ("PREEMPTED", JobState.PREEMPTED, True),
        ("CANCELLED", JobState.CANCELLED, True),
        ("REVOKED", JobState.CANCELLED, True),
        ("REQUEUED", JobState.PENDING, False),
        ("REQUEUE_HOLD", JobState.PENDING, False),
        ("REQUEUE_FED", JobState.PENDING, False),
        ("SPECIAL_EXIT", JobState.PENDING, False),
        ("SUSPENDED", JobState.PENDING, False),
        ("STOPPED", JobState.PENDING, False),
        ("RESV_DEL_HOLD", JobState.PENDING, False),
        ("CONFIGURING", JobState.PENDING, False),
        ("PENDING", JobState.PENDING, False),
        ("RUNNING", JobState.RUNNING, False),
        ("COMPLETING", JobState.RUNNING, False),
        ("SIGNALING", JobState.RUNNING, False),
        ("STAGE_OUT", JobState.RUNNING, False),
        ("RESIZING", JobState.RUNNING, False),
    ],
)
def test_job_state_decisions(word: str, state: JobState, finished: bool) -> None:
    assert job_state(word) == (word, state)
    assert (word in SLURM_FINISHED) is finished
    requeue = word in {"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT"}
    assert SLURM_JOB_STATES[word].requeue is requeue


@pytest.mark.parametrize(
    ("value", "word", "state"),
    [
        ("CANCELLED by 0", "CANCELLED", JobState.CANCELLED),  # sacct / scontrol
        ("CANCELLED+", "CANCELLED", JobState.CANCELLED),  # sacct, truncated
        (["RUNNING", "COMPLETING"], "COMPLETING", JobState.RUNNING),
        (["FAILED", "COMPLETING"], "COMPLETING", JobState.RUNNING),
        (["PENDING", "COMPLETING"], "COMPLETING", JobState.PENDING),  # requeued, 24.11
        (["PENDING", "REQUEUED"], "REQUEUED", JobState.PENDING),
        (["PENDING", "REQUEUE_HOLD"], "REQUEUE_HOLD", JobState.PENDING),
        (["RUNNING", "SIGNALING"], "SIGNALING", JobState.RUNNING),
        (["NODE_FAIL"], "NODE_FAIL", JobState.FAILED),
        ("WEIRD", "WEIRD", JobState.UNKNOWN),
        ([], "UNKNOWN", JobState.UNKNOWN),
        (None, "UNKNOWN", JobState.UNKNOWN),
    ],
)
def test_job_state_from_strings_and_lists(value: object, word: str, state: JobState) -> None:
    assert job_state(value) == (word, state)
    assert slurm_job_word(value)  # type: ignore[arg-type] == word


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        ({"set": True, "infinite": False, "number": 5}, 5),
        ({"set": False, "infinite": False, "number": 0}, None),
        ({"set": True, "infinite": True, "number": 0}, None),
        (None, None),
    ],
)
def test_numbers_plain_or_wrapped(value: object, expected: int | None) -> None:
    assert number(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, (0, None)),
        (768, (3, None)),  # 22.05: the raw wait status
        ({"set": True, "infinite": False, "number": 768}, (3, None)),  # 23.02: wrapped
        ({"set": True, "infinite": False, "number": 9}, (None, 9)),
        (9, (None, 9)),
        (
            {
                "status": ["ERROR"],
                "return_code": {"set": True, "infinite": False, "number": 3},
                "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""},
            },
            (3, None),
        ),
        (
            {
                "status": ["SIGNALED"],
                "return_code": {"set": False, "infinite": False, "number": 0},
                "signal": {"id": {"set": True, "infinite": False, "number": 9}, "name": "KILL"},
            },
            (None, 9),
        ),
        ({"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": 15}}, (0, 15)),
        (None, (None, None)),
    ],
)
def test_exit_codes_in_both_forms(value: object, expected: tuple[int | None, int | None]) -> None:
    assert exit_of(value) == expected


@pytest.mark.parametrize(
    ("words", "state"),
    [
        (["IDLE"], SchedulerNodeState.AVAILABLE),
        (["MIXED"], SchedulerNodeState.AVAILABLE),
        (["ALLOCATED", "COMPLETING"], SchedulerNodeState.AVAILABLE),
        (["IDLE", "POWERED_DOWN"], SchedulerNodeState.AVAILABLE),
        (["IDLE", "DRAIN"], SchedulerNodeState.DRAINED),
        (["MIXED", "DRAIN"], SchedulerNodeState.DRAINING),
        (["ALLOCATED", "FAIL"], SchedulerNodeState.DRAINING),
        (["DOWN", "DRAIN"], SchedulerNodeState.DOWN),
        (["DOWN", "NOT_RESPONDING"], SchedulerNodeState.DOWN),
        (["IDLE", "NOT_RESPONDING"], SchedulerNodeState.DOWN),
        (["FUTURE"], SchedulerNodeState.UNKNOWN),
    ],
)
def test_node_states(words: list[str], state: SchedulerNodeState) -> None:
    assert node_state(words) == state


def slurm_expansions(version: str) -> list[tuple[str, str]]:
    lines = (SLURM / version / "hostnames.tsv").read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines]  # type: ignore[misc]


@pytest.mark.parametrize(
    ("version", "expression", "names"),
    [(v, e, n) for v in VERSIONS for e, n in slurm_expansions(v)],
)
def test_hostlists_expand_as_slurm_does(version: str, expression: str, names: str) -> None:
    if names.startswith("ERROR"):
        # 22.05's scontrol rejects a suffix after a range (fixed since): 24.11's answer counts.
        assert version == "22.05"
        assert dict(slurm_expansions("24.11"))[expression] == ",".join(expand(expression))
    else:
        assert ",".join(expand(expression)) == names


def test_an_empty_hostlist_is_no_nodes() -> None:
    assert expand("") == () and expand(None) == ()
