"""What the Slurm adapter reads (`scontrol show job`, `sinfo -N`, hostlists), on what real Slurm
22.05 and 24.11 printed (tests/fixtures/realworld/slurm/)."""

from pathlib import Path

import pytest

from actions.adapters.slurm_cli import (
    exit_status,
    expand_nodes,
    gpus_in_gres,
    hostlist_of,
    parse_job,
    parse_nodes,
)
from actions.errors import PermanentError
from schemas.slurm import SLURM_FINISHED, slurm_job_word

SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm"
VERSIONS = ("22.05", "23.11", "24.11")


def job_fields(version: str, key: str) -> dict[str, str]:
    ids = dict(
        line.split("=") for line in (SLURM / version / "04-ended.jobs.txt").read_text().split()
    )
    return parse_job((SLURM / version / f"04-ended.scontrol-show-job-{ids[key]}.txt").read_text())


# job -> (JobState, finished for good, exit status run_on_nodes reports, nodes)
ENDED = {
    "completed": ("COMPLETED", True, 0, ["node1"]),
    "failed_exit3_2nodes": ("FAILED", True, 3, ["node1", "node2"]),
    "killed_sigkill": ("FAILED", True, 128 + 9, ["node2"]),
    "running": ("CANCELLED", True, 128 + 15, ["node1"]),
    "timeout": ("TIMEOUT", True, 143, ["node2"]),
    "node_fail": ("NODE_FAIL", True, None, ["node3"]),  # 22.05, 23.11: 0:0, 24.11: 0:1
    "requeued": ("PENDING", False, None, []),
    "node_fail_requeued": ("PENDING", False, None, []),
    "held_pending": ("PENDING", False, None, []),
    "array": ("COMPLETED", True, 0, ["node3"]),
}


@pytest.mark.parametrize("key", sorted(ENDED))
@pytest.mark.parametrize("version", VERSIONS)
def test_job_state_polling(version: str, key: str) -> None:
    fields = job_fields(version, key)
    word, finished, status, nodes = ENDED[key]
    assert slurm_job_word(fields["JobState"]) == word
    assert (word in SLURM_FINISHED) is finished
    assert (expand_nodes([fields["NodeList"]]) if fields["NodeList"] else []) == nodes
    if finished:
        got = exit_status(fields)
        assert got == status if status is not None else got != 0
    if key in ("requeued", "node_fail_requeued"):
        assert fields["Restarts"] == "1"


@pytest.mark.parametrize(
    ("version", "step", "expected"),
    [
        (v, "03-draining", {"node1": "draining", "node2": "draining", "node3": "idle"})
        for v in VERSIONS
    ]
    + [
        # 22.05 put node1 back in service on its own (ReturnToService=2) before the last look.
        ("22.05", "04-ended", {"node1": "idle", "node2": "idle", "node3": "down"}),
        ("23.11", "04-ended", {"node1": "down", "node2": "idle", "node3": "down"}),
        ("24.11", "04-ended", {"node1": "down", "node2": "idle", "node3": "down"}),
    ],
)
def test_node_states_from_sinfo(version: str, step: str, expected: dict[str, str]) -> None:
    found = parse_nodes((SLURM / version / f"{step}.sinfo-nodes.txt").read_text())
    assert {name: state for name, (state, _) in found.items()} == expected
    if step == "03-draining":
        assert found["node1"][1] == "capture-draining"


def slurm_expansions() -> list[tuple[str, str]]:
    lines = (SLURM / "24.11" / "hostnames.tsv").read_text().splitlines()
    return [(e, n) for e, n in (line.split("\t") for line in lines)]


@pytest.mark.parametrize(("expression", "names"), slurm_expansions())
def test_node_lists_round_trip_through_slurms_own_expansion(expression: str, names: str) -> None:
    assert expand_nodes([expression]) == names.split(",")
    # What the adapter hands to scontrol/sbatch expands back to the same names.
    assert expand_nodes([hostlist_of(names.split(","))]) == names.split(",")


def test_a_compact_list_for_the_command_line() -> None:
    assert hostlist_of(["node1", "node2", "node3"]) == "node[1-3]"
    assert hostlist_of(["gpu-01", "gpu-02", "login1"]) == "gpu-[01-02],login1"


@pytest.mark.parametrize("bad", [[], ["node1; rm -rf /"], ["node[1-"], ["a b"]])
def test_bad_node_names_are_permanent(bad: list[str]) -> None:
    with pytest.raises(PermanentError):
        hostlist_of(bad)


GRES = SLURM / "gres"


def test_gpus_in_gres_on_sinfo_gres_columns() -> None:
    # `sinfo -N -O …,Gres: ,GresUsed:` on Slurm 20.11.9: Gres is the 6th column.
    rows = [
        line.split() for line in (GRES / "sinfo-N-O-gres-gresused.txt").read_text().splitlines()
    ]
    configured = {row[0]: gpus_in_gres(row[5]) for row in rows}
    assert configured == {
        **{f"gpu-0{i}": 4 for i in range(1, 9)},
        **{f"cpu-0{i}": 0 for i in range(1, 5)},
    }
    # GresUsed has the same grammar, an index list with a comma of its own included.
    used = {row[0]: gpus_in_gres(row[6]) for row in rows}
    assert used["gpu-04"] == 3 and used["gpu-05"] == 0 and used["cpu-01"] == 0


def test_gpus_in_gres_adds_types_and_ignores_other_resources() -> None:
    lines = (GRES / "sinfo-gres-used.txt").read_text().splitlines()[1:]
    counts = {line.split()[1]: gpus_in_gres(line.split()[0]) for line in lines}
    assert counts == {
        "fb10dl03": 2,
        "fb10dl06": 3,
        "fb10dl07": 4,
        "fb10dl08": 1,
        "fb10dl09": 3,
        "resterampe": 2,  # gpu:1080ti:1(IDX:0),gpu:980gtx:1(IDX:1)
        "fb10dl[04-05]": 0,
    }
    disks = (GRES / "sinfo-h-o-n-G.txt").read_text().splitlines()
    assert {gpus_in_gres(line.split()[1]) for line in disks} == {0}  # tmp:844G is no GPU
