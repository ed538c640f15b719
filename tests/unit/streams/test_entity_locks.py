import asyncio

from streams.entity_locks import EntityLocks


async def test_folds_of_one_entity_take_turns_and_others_go_on() -> None:
    locks, order = EntityLocks(), []

    async def fold(key: str, name: str, pause_s: float) -> None:
        async with locks.holding("nodes", key):
            order.append(f"{name} read")
            await asyncio.sleep(pause_s)  # awaiting its outputs' acknowledgements
            order.append(f"{name} wrote")

    await asyncio.gather(fold("n1", "a", 0.02), fold("n1", "b", 0), fold("n2", "c", 0))
    assert order.index("a wrote") < order.index("b read")  # b never read what a was changing
    assert order.index("c wrote") < order.index("a wrote")  # another node did not wait
    assert len(locks) == 0  # no lock outlives its last user


async def test_a_failing_fold_releases_its_entity() -> None:
    locks = EntityLocks()
    try:
        async with locks.holding("nodes", "n1"):
            raise RuntimeError("a rule failed")
    except RuntimeError:
        pass
    async with asyncio.timeout(1):
        async with locks.holding("nodes", "n1"):
            pass
    assert len(locks) == 0
