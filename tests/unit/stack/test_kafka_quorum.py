"""Local Kafka nodes sharing a quorum form one cluster: every node votes, all share one cluster id,
and the cluster's own topics get three replicas and two in sync; alone, a node keeps one of each.
The cluster itself runs in tests/e2e/test_three_brokers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from centrality.stack.kafka import LocalKafka, Quorum
from centrality.stack.settings import StackSettings


def properties(kafka: LocalKafka) -> dict[str, str]:
    kafka.write_config()
    lines = kafka.config_file.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if not line.startswith("#"))


def test_three_nodes_vote_share_an_id_and_replicate_the_cluster_topics(tmp_path: Path) -> None:
    quorum = Quorum.of([19093, 29093, 39093])
    nodes = [
        LocalKafka(
            StackSettings(
                state_dir=tmp_path / str(node_id),
                kafka_port=port - 1,
                kafka_controller_port=port,
            ),
            node_id=node_id,
            quorum=quorum,
        )
        for node_id, port in quorum.controllers.items()
    ]
    voters = "1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093"
    for node_id, node in enumerate(nodes, start=1):
        props = properties(node)
        assert props["node.id"] == str(node_id)
        assert props["controller.quorum.voters"] == voters
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["transaction.state.log.min.isr"] == "2"
        assert props["min.insync.replicas"] == "2"
    assert {node.cluster_id() for node in nodes} == {quorum.cluster_id}


def test_alone_a_node_keeps_one_replica_and_follows_its_controller_port(tmp_path: Path) -> None:
    settings = StackSettings(state_dir=tmp_path, kafka_controller_port=19093)
    kafka = LocalKafka(settings)
    assert properties(kafka)["controller.quorum.voters"] == "1@127.0.0.1:19093"
    settings.kafka_controller_port = 29093  # ports are config, not identity
    props = properties(kafka)
    assert props["controller.quorum.voters"] == "1@127.0.0.1:29093"
    assert props["offsets.topic.replication.factor"] == props["min.insync.replicas"] == "1"


def test_a_node_must_be_a_controller_of_its_quorum(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a controller"):
        LocalKafka(
            StackSettings(state_dir=tmp_path, kafka_controller_port=1),
            node_id=2,
            quorum=Quorum.of([19093, 29093]),
        )
