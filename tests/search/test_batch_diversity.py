"""The evolutionary search's measured batch: near copies of a picked program wait while distinct ones remain."""
import pytest

from search.strategy import EvolutionarySearch
from search.strategy.base import Candidate
from search.strategy.diversity import decision_distance, decision_signature
from tensorize import te
from tensorize.schedule import Schedule


def _func():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    return te.create_prim_func([A, B])


def _candidate(key: int, tile_i: list[int], tile_j: list[int], score: float) -> Candidate:
    sch = Schedule(_func())
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64, decision=tile_i))
    sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=64, decision=tile_j))
    return Candidate(key, sch=sch, score=score)


def test_distance_counts_differing_decisions():
    a = decision_signature(_candidate(0, [8, 8], [4, 16], 0).trace)
    assert decision_distance(a, decision_signature(_candidate(1, [8, 8], [2, 32], 0).trace)) == 1
    assert decision_distance(a, decision_signature(_candidate(2, [4, 16], [2, 32], 0).trace)) == 2


@pytest.mark.parametrize("diversity, expected", [(0, [0, 1]), (1, [0, 2])])
def test_near_copies_wait(diversity, expected):
    ranked = [_candidate(0, [8, 8], [4, 16], 3.0), _candidate(1, [8, 8], [2, 32], 2.0),
              _candidate(2, [4, 16], [2, 32], 1.0)]
    search = EvolutionarySearch(batch_diversity=diversity)
    assert [c.key for c in search._diverse_top(ranked, 2)] == expected


def test_near_copies_fill_the_batch_when_nothing_else_remains():
    ranked = [_candidate(0, [8, 8], [4, 16], 3.0), _candidate(1, [8, 8], [2, 32], 2.0)]
    assert [c.key for c in EvolutionarySearch(batch_diversity=1)._diverse_top(ranked, 2)] == [0, 1]


def test_negative_diversity_is_refused():
    with pytest.raises(ValueError, match="batch_diversity"):
        EvolutionarySearch(batch_diversity=-1)
