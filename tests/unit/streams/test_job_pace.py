"""What a job tells its nodes of its pace (`streams.state.job_pace`): a ratio jittering at the edge
of a 5 % class is told once, not at every crossing; one that moves on is told again."""

from __future__ import annotations

from streams.testing import JOB, Story, running, step_times

HOSTS = ("n1", "n2", "n3", "n4")


def _interval(story: Story, at_s: float, step_s: dict[str, float]) -> None:
    story.tell(*(step_times(h, step_s.get(h, 1.0), at_s=at_s) for h in HOSTS))


def _told(story: Story, node: str) -> tuple[float | None, float | None]:
    pace = story.nodes[node].pace[JOB]
    return pace.slowdown, pace.ratio


def test_a_slowdown_jittering_at_a_class_edge_is_told_once() -> None:
    story = Story()
    story.tell(running(nodes=HOSTS, at_s=0.0))
    _interval(story, 60.0, {})  # the attempt's best pace: 1 s a step
    _interval(story, 120.0, dict.fromkeys(HOSTS, 1.124))  # 1.10 to the nearest 5 %
    assert _told(story, "n4")[0] == 1.124
    for i in range(6):  # either side of 1.125, where 1.10 and 1.15 meet
        _interval(story, 180.0 + 60 * i, dict.fromkeys(HOSTS, 1.126 if i % 2 == 0 else 1.124))
        assert _told(story, "n4")[0] == 1.124
    _interval(story, 600.0, dict.fromkeys(HOSTS, 1.2))
    assert _told(story, "n4")[0] == 1.2


def test_a_host_s_ratio_jittering_at_a_class_edge_is_told_once() -> None:
    story = Story()
    story.tell(running(nodes=HOSTS, at_s=0.0))
    _interval(story, 60.0, {"n3": 1.47})  # n3 behind the others: 1.45 to the nearest 5 %
    assert _told(story, "n3")[1] == 1.47
    for i in range(6):
        _interval(story, 120.0 + 60 * i, {"n3": 1.48 if i % 2 == 0 else 1.47})
        assert _told(story, "n3")[1] == 1.47
    _interval(story, 600.0, {"n3": 1.6})
    assert _told(story, "n3")[1] == 1.6
