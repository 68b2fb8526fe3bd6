"""Result tables under ``results/``: one CSV per experiment (appended run after run) and a
Markdown rendering of its latest rows."""
from __future__ import annotations

import os
from typing import Any, Sequence

import pandas as pd


def append_results(results_dir: str, experiment: str, rows: Sequence[dict[str, Any]]) -> str:
    """Append ``rows`` to ``results/<experiment>.csv`` and rewrite ``results/<experiment>.md``; returns the CSV path."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{experiment}.csv")
    frame = pd.DataFrame(list(rows))
    if os.path.exists(path):
        frame = pd.concat([pd.read_csv(path), frame], ignore_index=True)
    frame.to_csv(path, index=False)
    latest = frame.tail(20)
    with open(os.path.join(results_dir, f"{experiment}.md"), "w") as f:
        f.write(f"# {experiment}: latest runs\n\n")
        f.write(latest.to_markdown(index=False) if _has_tabulate() else latest.to_string(index=False))
        f.write("\n")
    return path


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
