"""Tuning-curve figures (matplotlib, no display needed): best-so-far GFLOPS against the trial number, one
line per run or a mean line with a min..max band per group of runs.

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "curve.png")
>>> tuning_curve_png({"lgbm_rank": [np.array([1.0, 2.0, 2.0])]}, path, "GMM")
>>> os.path.getsize(path) > 0
True
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["tuning_curve_png", "best_so_far"]


def best_so_far(values: Sequence[float]) -> np.ndarray:
    """Running maximum of a GFLOPS series (failed trials as 0)."""
    arr = np.nan_to_num(np.asarray(values, float), nan=0.0, posinf=0.0, neginf=0.0)
    return np.maximum.accumulate(arr) if arr.size else arr


def tuning_curve_png(groups: Mapping[str, Sequence[np.ndarray]], path: str, title: str, ax=None) -> None:
    """Draw best-so-far GFLOPS per trial: per group the mean over its runs and a min..max band.

    Parameters
    ----------
    groups : mapping of str to list of arrays
        Label -> one best-so-far GFLOPS array per run (runs of different lengths are cut to the shortest).
    path : str
        The PNG to write (ignored when ``ax`` is given: the caller saves the figure).
    title : str
        The plot's title.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6, 4))
    for label, runs in groups.items():
        runs = [np.asarray(r, float) for r in runs if len(r)]
        if not runs:
            continue
        n = min(len(r) for r in runs)
        stack = np.stack([r[:n] for r in runs])
        steps = np.arange(1, n + 1)
        ax.plot(steps, stack.mean(axis=0), label=f"{label} (n={len(runs)})")
        if len(runs) > 1:
            ax.fill_between(steps, stack.min(axis=0), stack.max(axis=0), alpha=0.2)
    ax.set_xlabel("trial")
    ax.set_ylabel("best GFLOPS so far")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    if own:
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
