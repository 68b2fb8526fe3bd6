"""Evolutionary search guided by a cost model (MetaSchedule's ``EvolutionarySearch``).

Each round:

1. **Initial population**: the best measured programs (``init_measured_ratio`` of the population)
   replayed from their traces, topped up with fresh samples of the sketches.
2. **Evolution**: ``genetic_num_iters`` generations. Parents are drawn in proportion to their
   predicted score; with probability ``genetic_mutate_prob`` a child is a mutation of its parent
   (one mutator, chosen by the mutators' probabilities), otherwise the parent itself. Invalid
   children are retried up to ``genetic_max_fail_count`` times per slot.
3. **Pick**: the best-scored programs never measured, with an ``eps_greedy`` share of random
   samples instead (exploration). No program is measured twice (programs are compared by
   structural hash). A program whose sampling decisions are within ``batch_diversity`` changes of
   one already picked this round waits until the distinct ones run out: with a model trained on a
   few dozen measurements, the top of the ranking is otherwise one program's near copies (a
   depthwise convolution's second round measured 14 variants of one tile shape).

Everything random draws from the task's ``TuneContext.rng``: given the same seed and the same
measured times, the search proposes the same programs.
"""
from __future__ import annotations

import logging
import time

import numpy as np

from ..schedule_rule.gpu_limits import is_gpu_target
from ..space_generator.cpu_tiles import register_budget, register_tile_fits
from ..space_generator.gpu_tiles import tilings_fit
from .base import Candidate, SearchStrategy
from .diversity import decision_distance, decision_signature
from .registry import STRATEGIES

logger = logging.getLogger(__name__)

__all__ = ["EvolutionarySearch"]


@STRATEGIES.register("evolutionary")
class EvolutionarySearch(SearchStrategy):
    """Evolutionary search over the sketches' decisions, scored by a cost model.

    Parameters (MetaSchedule's defaults)
    ----------
    population_size : int
        Programs per generation (512).
    init_measured_ratio : float
        Share of the initial population taken from the best measured programs (0.2).
    init_min_unmeasured : int
        Fresh samples wanted in the initial population at least (50).
    max_fail_count : int
        Sampling attempts per wanted fresh sample (5).
    genetic_num_iters : int
        Generations per round (4).
    genetic_mutate_prob : float
        Probability that a child is a mutation rather than a copy (0.85).
    genetic_max_fail_count : int
        Retries per child when mutation fails or yields a duplicate (10).
    eps_greedy : float
        Share of each measured batch drawn at random from the fresh samples (0.05).
    batch_diversity : int
        A program picked for measurement differs from every other one of its round in more than this
        many sampling decisions, while such programs remain (0: MetaSchedule's plain top-k).
    num_workers : int, optional
        Processes that replay and featurise candidates (``None``: the cores this process may use;
        the proposals are the same for any number).
    """

    def __init__(self, population_size: int = 512, init_measured_ratio: float = 0.2, init_min_unmeasured: int = 50,
                 max_fail_count: int = 5, genetic_num_iters: int = 4, genetic_mutate_prob: float = 0.85,
                 genetic_max_fail_count: int = 10, eps_greedy: float = 0.05, batch_diversity: int = 0,
                 num_workers: int | None = None):
        super().__init__()
        self.num_workers = num_workers
        if population_size < 1 or not 0 <= init_measured_ratio <= 1 or not 0 <= eps_greedy <= 1:
            raise ValueError("evolutionary search needs population_size >= 1 and init_measured_ratio, eps_greedy "
                             "in [0, 1]")
        self.population_size = int(population_size)
        self.init_measured_ratio = float(init_measured_ratio)
        self.init_min_unmeasured = int(init_min_unmeasured)
        self.max_fail_count = int(max_fail_count)
        self.genetic_num_iters = int(genetic_num_iters)
        self.genetic_mutate_prob = float(genetic_mutate_prob)
        self.genetic_max_fail_count = int(genetic_max_fail_count)
        self.eps_greedy = float(eps_greedy)
        if batch_diversity < 0:
            raise ValueError(f"batch_diversity is a number of decisions (>= 0), got {batch_diversity}")
        self.batch_diversity = int(batch_diversity)
        self.score_seconds = 0.0

    uses_mutators = True

    # -- scoring -----------------------------------------------------------------------------
    def _score(self, cands: list[Candidate]) -> None:
        """Fill ``score`` (and cached ``features``) of the candidates from the cost model."""
        if not cands:
            return
        start = time.perf_counter()
        if self.cost_model is None or self.features is None:
            for c in cands:
                c.score = self.ctx.rng.random()
        else:
            missing = [c for c in cands if c.features is None]
            if missing:
                for c, f in zip(missing, self.features.extract(self.ctx, [c.sch for c in missing])):
                    c.features = f
            scores = np.asarray(self.cost_model.predict(self.ctx, [c.features for c in cands]), dtype=float)
            for c, s in zip(cands, scores):
                c.score = float(s) if np.isfinite(s) else -np.inf
        self.score_seconds += time.perf_counter() - start

    # -- the round ---------------------------------------------------------------------------
    def _initial_population(self) -> tuple[list[Candidate], list[Candidate]]:
        seen: set[int] = set()
        population: list[Candidate] = []
        n_measured = int(self.population_size * self.init_measured_ratio)
        best = [trace for _, trace in sorted(self.measured_traces, key=lambda t: t[0])[:n_measured]]
        for cand in self.sampler.replay_batch(best, resample=False):
            if cand is not None and cand.key not in seen:
                seen.add(cand.key)
                population.append(cand)
        want = max(self.population_size - len(population), self.init_min_unmeasured)
        fresh = self._fresh_samples(want, max_attempts=want * self.max_fail_count, seen=seen)
        return population + fresh, fresh

    def _pick_parent(self, population: list[Candidate], weights: np.ndarray) -> Candidate:
        x = self.ctx.rng.random() * weights[-1]
        return population[min(int(np.searchsorted(weights, x, side="right")), len(population) - 1)]

    def _mutated_trace(self, parent: Candidate):
        """A mutation of ``parent``'s trace by one mutator (chosen by probability; where it finds nothing to
        change, the next by probability among the rest), or None. A default-schedule seed has no tile sizes
        for the likeliest mutator to change, only its row count: drawing one mutator and giving up almost
        never evolved a seed."""
        mutators = list(self.space.mutators.items())
        trace = None
        while mutators and trace is None:
            total = sum(p for _, p in mutators)
            x, acc = self.ctx.rng.random() * total, 0.0
            for index, (mutator, prob) in enumerate(mutators):
                acc += prob
                if x <= acc:
                    break
            mutators.pop(index)
            trace = mutator.apply(parent.trace, self.ctx, self.ctx.rng)
        if trace is not None and is_gpu_target(self.ctx.target) and not tilings_fit(trace):
            return None  # a thread block over the limits: dropped before the costly replay
        if trace is not None and not register_tile_fits(trace, register_budget(self.ctx), self.ctx.vector_bits()):
            return None  # accumulators past the register file would spill on every reduction step
        return trace

    def _generation(self, population: list[Candidate], cumulative: np.ndarray) -> list[Candidate]:
        """One generation of ``population_size`` children. Every open slot draws a parent and
        (with ``genetic_mutate_prob``) mutates it; the mutated traces of all slots replay as one
        batch; slots whose child is invalid or a duplicate try again, up to
        ``genetic_max_fail_count`` times."""
        children: list[Candidate | None] = [None] * self.population_size
        keys: set[int] = set()
        open_slots = list(range(self.population_size))
        for _attempt in range(self.genetic_max_fail_count):
            if not open_slots:
                break
            drawn, traces = [], []
            for slot in open_slots:
                parent = self._pick_parent(population, cumulative)
                if self.ctx.rng.random() < self.genetic_mutate_prob:
                    trace = self._mutated_trace(parent)
                    drawn.append((slot, None if trace is None else len(traces)))
                    if trace is not None:
                        traces.append(trace)
                else:
                    drawn.append((slot, parent))
            replayed = self.sampler.replay_batch(traces, resample=False)
            still_open = []
            for slot, what in drawn:
                child = what if isinstance(what, Candidate) else (None if what is None else replayed[what])
                if child is None or child.key in keys:
                    still_open.append(slot)
                    continue
                keys.add(child.key)
                children[slot] = child
            open_slots = still_open
        return [c for c in children if c is not None]

    def _evolve(self, population: list[Candidate]) -> dict[int, Candidate]:
        """Run the generations; return every unmeasured program seen, by key."""
        pool: dict[int, Candidate] = {c.key: c for c in population if c.key not in self.measured}
        for generation in range(self.genetic_num_iters):
            self._score(population)
            scores = np.array([c.score for c in population], dtype=float)
            finite = np.isfinite(scores)
            low = scores[finite].min() if finite.any() else 0.0
            span = (scores[finite].max() - low) if finite.any() else 0.0
            weights = np.where(finite, (scores - low) / span if span > 0 else 1.0, 0.0) + 1e-6
            children = self._generation(population, np.cumsum(weights))
            for child in children:
                if child.key not in self.measured:
                    pool.setdefault(child.key, child)
            if children:
                population = children
            logger.debug("generation %d: %d children, %d unmeasured programs seen", generation, len(children),
                         len(pool))
        self._score([c for c in pool.values()])
        return pool

    def _diverse_top(self, ranked: list[Candidate], n: int) -> list[Candidate]:
        """The first ``n`` of ``ranked``, skipping programs within ``batch_diversity`` decisions of one
        already taken while others remain."""
        if self.batch_diversity <= 0:
            return ranked[:n]
        picked, signatures, waiting = [], [], []
        for cand in ranked:
            if len(picked) >= n:
                break
            sig = decision_signature(cand.trace)
            if any(decision_distance(sig, other) <= self.batch_diversity for other in signatures):
                waiting.append(cand)
                continue
            picked.append(cand)
            signatures.append(sig)
        return picked + waiting[:n - len(picked)]

    def generate_measure_candidates(self, n: int) -> list[Candidate]:
        """The best of an evolved population by the cost model's score, plus random samples.

        A share ``eps_greedy`` of the ``n`` are fresh random samples; the rest are the best-scored
        unmeasured programs of the evolved population.

        Parameters
        ----------
        n : int
            How many candidates the round wants.

        Returns
        -------
        list of Candidate
            Up to ``n`` distinct, unmeasured candidates (empty when no valid population can be made).
        """
        population, fresh = self._initial_population()
        if not population:
            return []
        pool = self._evolve(population)
        ranked = sorted(pool.values(), key=lambda c: -c.score)
        n_random = int(round(n * self.eps_greedy))
        picked = self._diverse_top(ranked, n - n_random)
        keys: set[int] = {c.key for c in picked}
        randoms = [c for c in fresh if c.key not in keys and c.key not in self.measured]
        self.ctx.rng.shuffle(randoms)
        for cand in randoms:
            if len(picked) >= n:
                break
            keys.add(cand.key)
            picked.append(cand)
        for cand in ranked:  # the random share could not be filled: more of the best
            if len(picked) >= n:
                break
            if cand.key not in keys:
                keys.add(cand.key)
                picked.append(cand)
        return picked
