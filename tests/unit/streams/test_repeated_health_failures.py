from schemas.events import NodeHealthChecked
from streams.testing import benchmark, episode, health, result, xid
from tests.unit.streams.test_rules import brain, feed, kinds

RULE = "repeated_health_failures"


def critical(check: str, at_s: float, node: str = "n1", message: str = "") -> NodeHealthChecked:
    return health(node, check, "CRITICAL", at_s, message)


def test_three_critical_results_within_the_window_quarantine_once() -> None:
    b = brain()
    assert feed(b, critical("ib_link", 0), critical("ib_link", 300)) == []
    third = feed(b, critical("ib_link", 600, message="ib0 down"))
    assert kinds(third) == {(RULE, "QuarantineNodes"): 1}  # the benchmark waits for the drain
    q = next(t for t in third if t.type == "QuarantineNodes")
    assert q.payload.nodes == ("n1",) and q.payload.severity == "critical"
    assert "3 critical health checks on n1" in q.payload.reason and "ib0 down" in q.payload.reason
    assert len(q.payload.caused_by) == 3
    # a quarantine story is under way: more failures decide nothing more
    assert feed(b, critical("ib_link", 900)) == []


def test_failures_older_than_the_window_do_not_count() -> None:
    b = brain(repeated_health_failures={"window_s": 1000})
    assert feed(b, critical("disk", 0), critical("disk", 600), critical("disk", 1200)) == []
    assert kinds(feed(b, critical("disk", 1500)))[(RULE, "QuarantineNodes")] == 1


def test_warn_ok_and_unknown_do_not_count_and_a_recovered_node_is_left_alone() -> None:
    b = brain()
    events = [
        health("n1", "gpu_count", "WARN", 0),
        health("n1", "gpu_count", "UNKNOWN", 10),
        critical("gpu_count", 20),
        critical("gpu_count", 30),
        health("n1", "gpu_count", "OK", 40),
    ]
    assert feed(b, *events) == []
    assert [f.check for f in b.nodes["n1"].health_failures] == ["gpu_count", "gpu_count"]


def test_failures_of_different_checks_add_up_unless_checks_are_named() -> None:
    mixed = [critical("ntp", 0), critical("dns", 10), critical("ib_link", 20)]
    assert kinds(feed(brain(), *mixed))[(RULE, "QuarantineNodes")] == 1
    only_ib = brain(repeated_health_failures={"checks": ["ib_link"]})
    assert feed(only_ib, *mixed) == []


def test_for_s_holds_the_decision_until_failures_persist() -> None:
    b = brain(repeated_health_failures={"for_s": 600})
    assert feed(b, critical("ib", 0), critical("ib", 100), critical("ib", 200)) == []
    assert feed(b, health("n1", "ib", "OK", 300)) == []  # recovered: the clock restarts
    assert feed(b, critical("ib", 400)) == []
    assert kinds(feed(b, critical("ib", 1000)))[(RULE, "QuarantineNodes")] == 1


def test_a_redelivered_result_counts_once() -> None:
    b = brain()
    same = critical("ib", 0)
    assert feed(b, same, same, same) == []
    assert len(b.nodes["n1"].health_failures) == 1


def test_a_new_episode_after_release_can_quarantine_again() -> None:
    b = brain()
    [drain] = feed(b, critical("ib", 0), critical("ib", 1), critical("ib", 2))
    assert drain.payload.window == f"{episode(2)}/quarantine"
    [bench] = feed(b, result(drain, at_s=2.5))
    [release] = feed(b, benchmark(at_s=3, trigger=bench))
    assert release.type == "ReleaseNodes" and feed(b, result(release, at_s=3.5)) == []
    # the three before the benchmark no longer count, though still within the hour
    assert feed(b, critical("ib", 4), critical("ib", 5)) == []
    [again] = feed(b, critical("ib", 6))
    assert again.payload.window == f"{episode(6)}/quarantine"


def test_another_rule_that_quarantined_first_stops_this_one() -> None:
    b = brain()
    feed(b, xid(code=79))
    assert feed(b, critical("ib", 0), critical("ib", 1), critical("ib", 2)) == []
