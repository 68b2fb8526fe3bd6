"""Search strategies: how the next batch of programs to measure is chosen.

- ``"evolutionary"``: ``EvolutionarySearch``, genetic rounds over the sketches' decisions scored by
  the cost model, epsilon-greedy pick (the default);
- ``"random"``: ``ReplayTrace``, uniform samples of the sketches (the control).

>>> from search.strategy import STRATEGIES
>>> STRATEGIES.names()
['evolutionary', 'random']
>>> STRATEGIES.create("evolutionary", population_size=64).population_size
64
"""
from .base import Candidate, Sampler, SearchSpace, SearchStrategy
from .evolutionary import EvolutionarySearch
from .registry import STRATEGIES
from .replay_trace import ReplayTrace

__all__ = ["STRATEGIES", "SearchStrategy", "SearchSpace", "Candidate", "Sampler", "EvolutionarySearch", "ReplayTrace"]
