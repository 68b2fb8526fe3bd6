"""Compare tuned results from MLflow: ``python -m experiments.compare --experiment NAME`` (or
``python run.py mode=compare +experiment=NAME``) reads the experiment's job runs into pandas and writes
``results/NAME.md`` and ``results/NAME.png``.

Per workload (and target): one line per cost model with the tuned latency's mean and spread (std, min..max)
over seeds and its speedup over each baseline, and one line per baseline; then the geomean speedup of each
cost model over each baseline across workloads. The figure holds the tuning curves (best-so-far GFLOPS per
trial, mean over seeds with a min..max band), one panel per workload.

>>> import pandas as pd
>>> geomean(pd.Series([2.0, 8.0]))
4.0
"""
from __future__ import annotations

import argparse
import logging
import math
import os
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .plots import best_so_far, tuning_curve_png
from .report import write_atomically
from .tracking import KIND_TAG

log = logging.getLogger(__name__)

__all__ = ["load_runs", "comparison_markdown", "compare", "compare_from_config", "geomean"]


def geomean(values: pd.Series) -> float:
    """The geometric mean of the positive values of ``values`` (missing ones ignored).

    Parameters
    ----------
    values : pandas.Series
        E.g. speed-ups of one configuration over the operators.

    Returns
    -------
    float
        The geometric mean, or NaN when no value is positive.

    Examples
    --------
    >>> import pandas as pd
    >>> round(geomean(pd.Series([1.0, 4.0, None, -1.0])), 6)
    2.0
    """
    v = values.dropna()
    v = v[v > 0]
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")


def load_runs(uri: str, experiment: str, where: str = "") -> pd.DataFrame:
    """The experiment's finished job runs as a DataFrame (``mlflow.search_runs`` columns); ``where`` adds an
    MLflow filter (e.g. ``params.`runner.threads` = '1'``)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(experiment) is None:
        raise KeyError(f"MLflow at {uri} has no experiment {experiment!r}; run it first "
                       f"(python run.py +experiment={experiment})")
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string=f"tags.`{KIND_TAG}` = 'job' and "
                              "attributes.status = 'FINISHED'" + (f" and {where}" if where else ""),
                              max_results=10000)
    if runs.empty:
        raise KeyError(f"MLflow experiment {experiment!r} at {uri} holds no finished job runs")
    return runs


def _fmt(mean: float, std: float, lo: float, hi: float, n: int) -> str:
    if n <= 1:
        return f"{mean:.4g}"
    return f"{mean:.4g} ± {std:.2g} ({lo:.4g}..{hi:.4g})"


def comparison_markdown(runs: pd.DataFrame, experiment: str, note: str = "") -> str:
    """The comparison tables of ``runs`` (as ``load_runs`` returns them) as Markdown."""
    baselines = sorted(c[len("metrics."):-len("_ms")] for c in runs.columns
                       if c.startswith("metrics.") and c.endswith("_ms") and "." not in c[len("metrics."):]
                       and c not in ("metrics.latency_ms", "metrics.best_latency_ms"))
    out = [f"# {experiment}: tuned results vs baselines and cost models", ""]
    if note:
        out += [note, ""]
    speedups: list[dict[str, Any]] = []
    for (workload, shape, target), group in runs.groupby(["tags.workload", "tags.shape", "tags.target"]):
        out += [f"## {workload} ({shape}) on {target}", "",
                "| program | runs | latency ms (mean ± std (min..max)) | GFLOPS | "
                + " | ".join(f"× vs {b}" for b in baselines) + " |",
                "|---|---|---|---|" + "---|" * len(baselines)]
        base_ms = {b: group[f"metrics.{b}_ms"].mean() for b in baselines}
        for cm, runs_cm in group.groupby("tags.cost_model"):
            lat = runs_cm["metrics.latency_ms"].astype(float)
            label = f"tensorize {runs_cm['tags.schedule'].iloc[0]} ({cm})"
            cells = []
            for b in baselines:
                sp = base_ms[b] / lat
                cells.append(f"{sp.mean():.2f}" + (f" ± {sp.std():.2f}" if len(sp) > 1 else ""))
                speedups.append({"workload": workload, "cost_model": cm, "baseline": b, "speedup": float(sp.mean())})
            gf = runs_cm["metrics.gflops"].astype(float).mean()
            out.append(f"| {label} | {len(lat)} | {_fmt(lat.mean(), lat.std(), lat.min(), lat.max(), len(lat))} "
                       f"| {gf:.3g} | " + " | ".join(cells) + " |")
        for b in baselines:
            if math.isnan(base_ms[b]):
                continue
            ms = group[f"metrics.{b}_ms"].astype(float)
            out.append(f"| {b} | {ms.notna().sum()} | {_fmt(ms.mean(), ms.std(), ms.min(), ms.max(), ms.notna().sum())}"
                       f" | | " + " | ".join("" for _ in baselines) + " |")
        out.append("")
    if speedups:
        frame = pd.DataFrame(speedups)
        table = frame.groupby(["cost_model", "baseline"])["speedup"].apply(geomean).unstack("baseline")
        out += ["## Geomean speedup over the workloads", "",
                "| cost model | " + " | ".join(f"× vs {b}" for b in table.columns) + " |",
                "|---|" + "---|" * len(table.columns)]
        for cm, row in table.iterrows():
            out.append(f"| {cm} | " + " | ".join(f"{v:.2f}" for v in row.values) + " |")
        out.append("")
    return "\n".join(out)


def _curves(runs: pd.DataFrame) -> dict[str, dict[str, list[np.ndarray]]]:
    """workload -> cost model -> best-so-far GFLOPS per run (from the per-trial metric history)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    panels: dict[str, dict[str, list[np.ndarray]]] = {}
    for _, run in runs.iterrows():
        history = client.get_metric_history(run["run_id"], "best_gflops")
        if not history:
            continue
        steps = max(m.step for m in history)
        series = np.zeros(steps)
        for m in history:
            series[m.step - 1] = m.value
        key = f"{run['tags.workload']} ({run['tags.shape']}, {run['tags.target']})"
        panels.setdefault(key, {}).setdefault(run["tags.cost_model"], []).append(best_so_far(series))
    return panels


def compare(uri: str, experiment: str, results_dir: str, note: str = "", where: str = "") -> str:
    """Write ``results_dir/<experiment>.md`` and ``.png``; returns the Markdown path."""
    runs = load_runs(uri, experiment, where)
    os.makedirs(results_dir, exist_ok=True)
    md_path = os.path.join(results_dir, f"{experiment}.md")
    png_path = os.path.join(results_dir, f"{experiment}.png")
    text = comparison_markdown(runs, experiment, note)
    panels = _curves(runs)
    if panels:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cols = min(3, len(panels))
        rows = math.ceil(len(panels) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
        for ax, (title, groups) in zip(axes.flat, sorted(panels.items())):
            tuning_curve_png(groups, png_path, title, ax=ax)
        for ax in list(axes.flat)[len(panels):]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(png_path, dpi=100)
        plt.close(fig)
        text += f"\n![tuning curves]({os.path.basename(png_path)})\n"
    write_atomically(md_path, text)
    return md_path


def _absolute_uri(uri: str, cwd: str) -> str:
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + os.path.join(cwd, uri[len("sqlite:///"):])
    return uri


def compare_from_config(cfg: Mapping[str, Any], cwd: str) -> str:
    """``compare`` for a composed Hydra config (``mode=compare``)."""
    trk = cfg["tracking"]
    if not trk.get("enabled", True):
        raise SystemExit("mode=compare reads MLflow: choose tracking=mlflow_local or mlflow_server, not off")
    return compare(_absolute_uri(trk["uri"], cwd), trk.get("experiment_name") or cfg["experiment"]["name"],
                   os.path.join(cwd, cfg.get("results_dir", "results")))


def main(argv=None) -> None:
    """The command line: write the comparison of an MLflow experiment's runs and print the Markdown path.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``): ``--experiment``, ``--uri``, ``--results``,
        ``--note``, ``--where``.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", required=True, help="the MLflow experiment (the experiment's name)")
    parser.add_argument("--uri", default="sqlite:///mlflow.db", help="the MLflow tracking URI")
    parser.add_argument("--results", default="results", help="where the .md and .png go")
    parser.add_argument("--note", default="", help="a paragraph put under the title")
    parser.add_argument("--where", default="", help="an MLflow filter on the runs, e.g. \"params.seed = '0'\"")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    print(compare(_absolute_uri(args.uri, os.getcwd()), args.experiment, args.results, args.note,  # noqa: T201
                  args.where))


if __name__ == "__main__":
    main()
