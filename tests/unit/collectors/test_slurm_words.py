from collectors.watchers.slurm.hostlist import expand
from collectors.watchers.slurm.states import exit_of, job_state, node_health, raw_state
from schemas.events.jobs import JobState
from schemas.events.nodes import HealthStatus


def test_hostlists() -> None:
    assert expand("") == ()
    assert expand("node1") == ("node1",)
    assert expand("node[1-3]") == ("node1", "node2", "node3")
    assert expand("gpu-[01-02,07],login1") == ("gpu-01", "gpu-02", "gpu-07", "login1")
    assert expand("a[1-2]-ib,b3") == ("a1-ib", "a2-ib", "b3")


def test_states_exit_codes_and_node_health() -> None:
    assert raw_state("FAILED") == "FAILED" and raw_state(["RUNNING", "COMPLETING"]) == "RUNNING"
    assert job_state("NODE_FAIL") == JobState.FAILED
    assert job_state("CANCELLED+") == JobState.CANCELLED
    assert job_state("REQUEUED") == JobState.PENDING
    assert job_state("PREEMPTED") == JobState.PREEMPTED
    assert job_state("WEIRD") == JobState.UNKNOWN
    assert exit_of(768) == (3, None)  # 22.05: the raw wait status
    assert exit_of(9) == (None, 9)
    assert exit_of({"status": "FAILED", "return_code": 3, "signal": {"id": 0}}) == (3, None)
    assert exit_of({"return_code": {"number": 0}, "signal": {"id": {"number": 15}}}) == (0, 15)
    assert node_health("idle", []) == HealthStatus.OK
    assert node_health("idle", ["DRAIN"]) == HealthStatus.WARN
    assert node_health("mixed", ["NOT_RESPONDING"]) == HealthStatus.CRITICAL
    assert node_health("down", []) == HealthStatus.CRITICAL
