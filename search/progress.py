"""The progress of a tuning run: a tqdm bar (trials, best GFLOPS, valid / failed / invalid counts)
and one log line per round."""
from __future__ import annotations

import logging

from tqdm import tqdm

logger = logging.getLogger("search")

__all__ = ["TuningProgress"]


class TuningProgress:
    """Follows a ``TuningReport`` as rounds complete.

    >>> from search.tune import TuningReport
    >>> report = TuningReport("wl", "llvm", flops=2e9)
    >>> bar = TuningProgress(4, report, enabled=False)
    >>> report.trials, report.valid, report.best_secs = 2, 2, 0.01
    >>> bar.update_round()
    >>> bar.summary()
    'trials 2/4, valid 2, failed 0, invalid samples 0, best 10.000 ms (200.0 GFLOPS)'
    >>> bar.close()
    """

    def __init__(self, total: int, report, enabled: bool = True):
        self.report, self.total, self.round = report, total, 0
        self.bar = tqdm(total=total, initial=min(report.trials, total), unit="trial", desc=f"tune {report.workload[:8]}",
                        disable=not enabled, leave=False)

    def summary(self) -> str:
        """One line: trials, valid and failed counts."""
        r = self.report
        best = f"{r.best_secs * 1e3:.3f} ms ({r.best_gflops:.1f} GFLOPS)" if r.valid else "none yet"
        return (f"trials {r.trials}/{self.total}, valid {r.valid}, failed {sum(r.failed.values())}, "
                f"invalid samples {sum(r.invalid_samples.values())}, best {best}")

    def update_round(self) -> None:
        """Advance the progress bar after a round and log it."""
        self.round += 1
        self.bar.update(min(self.report.trials, self.total) - self.bar.n)
        self.bar.set_postfix_str(f"best {self.report.best_gflops:.1f} GFLOPS, valid {self.report.valid}, "
                                 f"invalid {sum(self.report.invalid_samples.values())}")
        logger.info("round %d: %s", self.round, self.summary())

    def close(self) -> None:
        """Close the progress bar."""
        self.bar.close()
