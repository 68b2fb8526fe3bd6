"""Result tables under ``results/``: one CSV per experiment (appended run after run) and a
Markdown rendering of its latest rows.

Both files are written whole to a temporary file beside the target and moved over it with
``os.replace``, so a process killed at any moment leaves either the old table or the new one, never a
truncated file.
"""
from __future__ import annotations

import logging
import os
import tempfile
from typing import Any, Sequence

import pandas as pd

log = logging.getLogger(__name__)


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a temporary file in the same folder, then ``os.replace``).

    Parameters
    ----------
    path : str
        The file to write.
    text : str
        Its new content.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o644)  # mkstemp creates 0600; a results table is readable like any file
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def _read_existing(path: str) -> pd.DataFrame | None:
    if not os.path.exists(path):
        return None
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        aside = path + ".unreadable"
        os.replace(path, aside)
        log.warning("%s could not be read (%s); moved it to %s and started a new table", path, err, aside)
        return None


def append_results(results_dir: str, experiment: str, rows: Sequence[dict[str, Any]]) -> str:
    """Append ``rows`` to ``results/<experiment>.csv`` and rewrite ``results/<experiment>.md``; returns the CSV path."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{experiment}.csv")
    frame = pd.DataFrame(list(rows))
    existing = _read_existing(path)
    if existing is not None:
        frame = pd.concat([existing, frame], ignore_index=True)
    write_atomically(path, frame.to_csv(index=False))
    latest = frame.tail(20)
    table = latest.to_markdown(index=False) if _has_tabulate() else latest.to_string(index=False)
    write_atomically(os.path.join(results_dir, f"{experiment}.md"), f"# {experiment}: latest runs\n\n{table}\n")
    return path


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
