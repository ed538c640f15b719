"""How long a `TopicReader` takes to load a topic, then to read again with nothing new (what the
action worker does before each breaker refusal and each rule's decision it acts on).

    python -m centrality.bench.reader [topic] [refreshes]

against the configured Kafka (`CENTRALITY_KAFKA_*`); prints one JSON line.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import orjson

from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import TopicReader
from schemas.topics import topic_name


async def measure(topic: str, refreshes: int) -> dict[str, float | int]:
    kafka = KafkaSettings()
    records = 0

    def count(batch: object) -> None:
        nonlocal records
        records += len(batch)  # type: ignore[arg-type]

    reader = TopicReader(kafka, topic_name(topic, kafka), count, client_id="bench-reader")
    try:
        started = time.perf_counter()
        await reader.load()
        load_s = time.perf_counter() - started
        took = []
        for _ in range(refreshes):
            started = time.perf_counter()
            await reader.refresh()
            took.append(time.perf_counter() - started)
    finally:
        await reader.stop()
    return {
        "records": records,
        "load_s": round(load_s, 3),
        "refresh_median_s": round(statistics.median(took), 4),
        "refresh_max_s": round(max(took), 4),
    }


def main() -> None:
    topic = sys.argv[1] if len(sys.argv) > 1 else "status"
    refreshes = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    print(orjson.dumps(asyncio.run(measure(topic, refreshes))).decode())


if __name__ == "__main__":
    main()
