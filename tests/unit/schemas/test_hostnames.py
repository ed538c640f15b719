"""Node names folded into a hostlist: python-hostlist expands it back to the very names."""

from __future__ import annotations

import hostlist
from hypothesis import given
from hypothesis import strategies as st

from schemas.hostnames import collect

NAME = st.from_regex(r"[a-z][a-z0-9.-]{0,8}[0-9]{0,4}", fullmatch=True)


def test_a_fleet_numbered_with_padding_folds_into_ranges() -> None:
    names = [f"node{i:03d}" for i in range(1, 144)] + ["login", "node200"]
    assert collect(names) == "login,node[001-143,200]"


def test_numbers_of_other_widths_stay_apart() -> None:
    assert collect(["n7", "n8", "n9", "n10", "n11", "n07"]) == "n[7-9],n[07,10-11]"


def test_names_a_hostlist_cannot_say_are_left_out() -> None:
    assert collect(["a[1]", "b,c", "d1"]) == "d1"


@given(st.lists(NAME, max_size=40))
def test_python_hostlist_expands_it_back_to_the_same_names(names: list[str]) -> None:
    assert sorted(hostlist.expand_hostlist(collect(names))) == sorted(set(names))
