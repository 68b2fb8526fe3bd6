"""How well the cost models rank held-out candidates: pairwise accuracy, top-1/top-5 recall, speed.

Run: ``python benchmarks/cost_model_quality.py [--per-workload 150] [--splits 5] [--seed 0] [--train-sizes 16,32]``
or   ``python benchmarks/cost_model_quality.py --database tuning.jsonl [--fresh 100]`` (records of a tuning run).

Without ``--database`` the script makes its own records: random but valid schedules of a 256^3 fp32
GEMM and a 3x3 conv2d NHWC 14x14 64->64 (random perfect tilings from ``sample_perfect_tile``, loops reordered
spatial-outer / reduce / spatial-inner, the outer spatial loops fused and (by a coin) parallel, the
innermost spatial loop (by a coin) vectorized, the inner reduction (by a coin) unrolled), built with
``tensorize.build(sch.mod, target="llvm -mcpu=native")`` and timed with ``time_evaluator`` (median of
repeats). With ``--database`` each record's trace is replayed on its workload and its mean run time
is used (failed records count as failed).

Features come from ``search.feature`` ("per_store"). For each of ``--splits`` random 70/30 splits
(per workload) every model of ``search.cost_model`` is trained on the 70% and scores the 30%; the
table gives, averaged over splits and workloads: pairwise ranking accuracy (pairs of held-out
candidates with different times, ordered as their times are), top-1 recall (the held-out best is the
model's first pick), top-5 recall (share of the true 5 fastest among the model's 5 picks), training
and prediction time. ``--train-sizes`` adds the regime of a 64-trial search: models trained on 16..64
records, scoring the rest (pairwise accuracy, recall of the 16 fastest among the model's 16 picks, and
how close the best of those picks is to the true best). ``--fresh N`` (with ``--database``) asks what a search's
model knows beyond the programs it measured: N fresh samples of each workload's space (the search's sampler) are
timed and scored by models trained on all the workload's records (pairwise accuracy, and the mean time of the 8
best-scored samples against that of all samples, both relative to the best sample).
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lightgbm  # noqa: E402,F401  (imported here so that its import time is not counted as training)
import numpy as np  # noqa: E402

import tensorize as tvm  # noqa: E402
from search.context import TuneContext  # noqa: E402
from search.cost_model import COST_MODELS  # noqa: E402
from search.feature import FEATURES  # noqa: E402
from search.feature.program import lower_for_features  # noqa: E402
from search.measure.inputs import random_arguments  # noqa: E402
from search.postproc import default_postprocs  # noqa: E402
from search.space_generator import PostOrderApply, sample_candidate  # noqa: E402
from tensorize import te  # noqa: E402
from tensorize.schedule import Schedule  # noqa: E402

TARGET = "llvm -mcpu=native"


# -- workloads and the random schedule generator ----------------------------------------------------
def gemm(n: int = 256):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C]), "C", 2 * n ** 3


def conv2d_nhwc(hw: int = 14, ci: int = 64, co: int = 64, kh: int = 3):
    data = te.placeholder((1, hw + kh - 1, hw + kh - 1, ci), name="data")
    kernel = te.placeholder((kh, kh, ci, co), name="kernel")
    rh = te.reduce_axis((0, kh), name="rh")
    rw = te.reduce_axis((0, kh), name="rw")
    rc = te.reduce_axis((0, ci), name="rc")
    out = te.compute((1, hw, hw, co), lambda n, h, w, c: te.sum(
        data[n, h + rh, w + rw, rc] * kernel[rh, rw, rc, c], axis=[rh, rw, rc]), name="conv")
    return te.create_prim_func([data, kernel, out]), "conv", 2 * hw * hw * co * ci * kh * kh


def random_schedule(func, block: str, seed: int) -> Schedule:
    """A random valid schedule: tile spatial loops in 3 and reduction loops in 2 (sampled perfect
    tiles), order S0.. S1.. R0.. R1.. S2.., fuse the S0 loops (parallel by a coin), vectorize the last
    loop (by a coin, when its extent is at most 64), unroll the last reduction loop (by a coin)."""
    rng = random.Random(seed)
    sch = Schedule(func, seed=seed)
    b = sch.get_block(block)
    kinds = [iv.iter_type for iv in sch.get(b).iter_vars]
    spatial, reduce = [], []
    for loop, kind in zip(sch.get_loops(b), kinds):
        if kind == 0:
            spatial.append(sch.split(loop, sch.sample_perfect_tile(loop, 3, max_innermost_factor=64)))
        else:
            reduce.append(sch.split(loop, sch.sample_perfect_tile(loop, 2, max_innermost_factor=16)))
    order = [t[0] for t in spatial] + [t[1] for t in spatial] + [t[0] for t in reduce] + \
        [t[1] for t in reduce] + [t[2] for t in spatial]
    sch.reorder(*order)
    outer = sch.fuse(*[t[0] for t in spatial])
    if rng.random() < 0.7:
        sch.parallel(outer)
    sch.decompose_reduction(b, reduce[0][0])
    last = spatial[-1][2]
    if rng.random() < 0.7 and 1 < _extent(sch, last) <= 64:
        sch.vectorize(last)
    if rng.random() < 0.4 and _extent(sch, reduce[-1][1]) <= 16:
        sch.unroll(reduce[-1][1])
    return sch


def _extent(sch, loop) -> int:
    return int(sch.get(loop).extent.value)


def measure(sch, arrays, repeat: int = 3) -> float:
    """Median seconds per call of the built schedule (inf when it does not build or run)."""
    try:
        lib = tvm.build(sch.mod, target=TARGET)
        ev = lib.time_evaluator(lib.entry_name, tvm.cpu(), number=1, repeat=repeat, min_repeat_ms=2)
        return float(np.median(ev(*arrays).results))
    except Exception as err:  # noqa: BLE001 - a failed candidate is a record too
        logging.warning("candidate failed: %s", err)
        return float("inf")


def generate_records(per_workload: int, seed: int):
    """``[(name, ctx, [schedule], run_secs: np.ndarray, build+run secs)]`` for the two workloads."""
    out = []
    for name, (func, block, _flops) in (("gemm256", gemm()), ("conv2d_nhwc", conv2d_nhwc())):
        ctx = TuneContext.create(func, TARGET, seed=seed, task_name=name)
        rng = np.random.default_rng(seed)
        arrays = [tvm.nd.array(rng.random([int(s) for s in p.shape], np.float32)) for p in
                  (func.buffer_map[v] for v in func.params)]
        schedules, secs, seen = [], [], set()
        start = time.perf_counter()
        s = seed * 100003
        while len(schedules) < per_workload and s < seed * 100003 + per_workload * 20:
            s += 1
            try:
                sch = random_schedule(func, block, s)
            except Exception as err:  # noqa: BLE001 - an invalid sample is skipped
                logging.debug("sample %d invalid: %s", s, err)
                continue
            key = str(sch.trace.as_json())
            if key in seen:
                continue
            seen.add(key)
            schedules.append(sch)
            secs.append(measure(sch, arrays))
        out.append((name, ctx, schedules, np.array(secs), time.perf_counter() - start))
    return out


def fresh_records(records, n: int, seed: int):
    """For each workload of ``records``: ``n`` fresh random samples of its sketches (the search's own sampler,
    ``sample_candidate``, round robin over the sketches), built and timed: records of the same form."""
    out = []
    for name, ctx, _schedules, _secs, _took in records:
        func = ctx.mod[ctx.mod.function_names()[0]]
        sketches = PostOrderApply().generate_design_space(ctx)
        posts, arrays = default_postprocs(ctx), [tvm.nd.array(a) for a in random_arguments(func, seed)]
        schedules, secs, start = [], [], time.perf_counter()
        for i in range(n * 3):
            if len(schedules) >= n:
                break
            try:
                sch = sample_candidate(ctx, sketches[i % len(sketches)], posts, seed=seed * 100003 + i)
            except Exception as err:  # noqa: BLE001 - an invalid sample is skipped
                logging.debug("sample %d invalid: %s", i, err)
                continue
            schedules.append(sch)
            secs.append(measure(sch, arrays))
        out.append((name, ctx, schedules, np.array(secs), time.perf_counter() - start))
    return out


def evaluate_fresh(records, feats, fresh, fresh_feats, pick: int = 8):
    """Models trained on every record of a workload (a search's measured programs), scoring fresh samples of
    its space: pairwise accuracy, and the mean time of the model's ``pick`` best-scored samples and of all
    samples, relative to the best sample."""
    rows = {}
    for model_name in ("lgbm_rank", "lgbm_reg", "random"):
        acc, top, every = [], [], []
        for (name, ctx, _s, secs, _t), X, (_n, _c, _fs, fsecs, _ft), FX in zip(records, feats, fresh, fresh_feats):
            ok = np.isfinite(fsecs)
            if ok.sum() < pick:
                continue
            ctx.rng = random.Random(0)
            model = COST_MODELS.create(model_name)
            model.update(ctx, list(X), list(secs))
            scores = np.asarray(model.predict(ctx, list(FX[ok])))
            rel = fsecs[ok] / fsecs[ok].min()
            acc.append(pairwise_accuracy(scores, fsecs[ok]))
            top.append(float(rel[np.argsort(-scores, kind="stable")[:pick]].mean()))
            every.append(float(rel.mean()))
        if acc:
            rows[model_name] = (np.nanmean(acc), np.mean(top), np.mean(every))
    return rows


def load_database(path: str):
    from search.database import Database

    db = Database(path)
    by_wl: dict = {}
    for rec in db.get_all_tuning_records():
        by_wl.setdefault(rec.workload.key, (rec.workload, []))[1].append(rec)
    out = []
    for key, (wl, recs) in by_wl.items():
        ctx = TuneContext.create(wl.mod, TARGET, seed=0, task_name=key[:12])
        schedules, secs = [], []
        for rec in recs:
            try:
                schedules.append(rec.replay())
            except Exception as err:  # noqa: BLE001 - a record that no longer replays is skipped
                logging.warning("record of %s does not replay: %s", key[:12], err)
                continue
            secs.append(rec.mean_run_secs if rec.is_valid else float("inf"))
        if len(schedules) >= 10:
            out.append((key[:12], ctx, schedules, np.array(secs), 0.0))
    return out


# -- metrics ----------------------------------------------------------------------------------------
def pairwise_accuracy(scores: np.ndarray, secs: np.ndarray) -> float:
    """Share of pairs with different (finite or failed) times that ``scores`` order as the times do."""
    thr = np.where(np.isfinite(secs), 1.0 / np.where(np.isfinite(secs), secs, 1.0), 0.0)
    d_true = np.sign(thr[:, None] - thr[None, :])
    d_pred = np.sign(scores[:, None] - scores[None, :])
    mask = np.triu(d_true != 0, 1)
    return float((d_true[mask] == d_pred[mask]).mean()) if mask.any() else float("nan")


def top_k_recall(scores: np.ndarray, secs: np.ndarray, k: int) -> float:
    """Share of the ``k`` truly fastest among the ``k`` best-scored (ties in scores broken by index)."""
    k = min(k, len(secs))
    true = set(np.argsort(secs, kind="stable")[:k].tolist())
    pred = set(np.argsort(-scores, kind="stable")[:k].tolist())
    return len(true & pred) / k


def extract_features(records):
    """Feature matrices per workload, and the median lowering and extraction milliseconds."""
    extractor = FEATURES.create("per_store")
    feats, lower_ms, feat_ms = [], [], []
    for _name, _ctx, schedules, _secs, _t in records:
        vs = []
        for sch in schedules:
            t0 = time.perf_counter()
            low = lower_for_features(sch.mod)
            t1 = time.perf_counter()
            vs.append(extractor.from_lowered(low))
            t2 = time.perf_counter()
            lower_ms.append((t1 - t0) * 1e3)
            feat_ms.append((t2 - t1) * 1e3)
        feats.append(np.stack(vs))
    return feats, float(np.median(lower_ms)), float(np.median(feat_ms))


def save_features(path, records, feats) -> None:
    np.savez(path, names=np.array([r[0] for r in records]), sizes=np.array([len(r[3]) for r in records]),
             X=np.concatenate(feats), secs=np.concatenate([r[3] for r in records]))


def load_features(path):
    """Records (without schedules) and feature matrices saved by ``--save-features``."""
    with np.load(path, allow_pickle=False) as data:
        records, feats, start = [], [], 0
        for name, size in zip(data["names"].tolist(), data["sizes"].tolist()):
            ctx = TuneContext.create(gemm(8)[0], TARGET, seed=0, task_name=str(name))
            records.append((str(name), ctx, None, data["secs"][start:start + size], 0.0))
            feats.append(data["X"][start:start + size])
            start += size
    return records, feats


def evaluate(records, feats, splits: int, seed: int):
    rows = {}
    for model_name in ("lgbm_rank", "lgbm_reg", "random"):
        acc, top1, top5, train_s, pred_ms = [], [], [], [], []
        for split in range(splits):
            rng = np.random.default_rng(seed * 1000 + split)
            model = COST_MODELS.create(model_name)
            held = []
            t0 = time.perf_counter()
            for (name, ctx, _s, secs, _t), X in zip(records, feats):
                ctx.rng = random.Random(seed * 1000 + split)
                perm = rng.permutation(len(secs))
                cut = int(0.7 * len(secs))
                train, test = perm[:cut], perm[cut:]
                model.update(ctx, list(X[train]), list(secs[train]))
                held.append((ctx, X[test], secs[test]))
            train_s.append(time.perf_counter() - t0)
            for ctx, X, secs in held:
                t1 = time.perf_counter()
                scores = model.predict(ctx, list(X))
                pred_ms.append((time.perf_counter() - t1) * 1e3 / max(1, len(X)))
                acc.append(pairwise_accuracy(scores, secs))
                top1.append(top_k_recall(scores, secs, 1))
                top5.append(top_k_recall(scores, secs, 5))
        rows[model_name] = (np.nanmean(acc), np.mean(top1), np.mean(top5), np.mean(train_s), np.mean(pred_ms))
    return rows


def evaluate_small(records, feats, sizes, draws: int, seed: int, pick: int = 16):
    """The models trained on only ``n`` records (what the search has after its first rounds), scoring the
    rest of the workload: pairwise accuracy, recall of the true ``pick`` fastest among the model's ``pick``
    picks, and the best of those picks relative to the true best (1.0: the batch holds the best)."""
    rows = {}
    for n in sizes:
        for model_name in ("lgbm_rank", "lgbm_reg"):
            acc, recall, best = [], [], []
            for (name, ctx, _s, secs, _t), X in zip(records, feats):
                if len(secs) < n + pick:
                    continue
                for draw in range(draws):
                    rng = np.random.default_rng(seed * 1000 + draw)
                    ctx.rng = random.Random(seed * 1000 + draw)
                    perm = rng.permutation(len(secs))
                    train, test = perm[:n], perm[n:]
                    model = COST_MODELS.create(model_name)
                    model.update(ctx, list(X[train]), list(secs[train]))
                    scores = np.asarray(model.predict(ctx, list(X[test])))
                    acc.append(pairwise_accuracy(scores, secs[test]))
                    recall.append(top_k_recall(scores, secs[test], pick))
                    picked = test[np.argsort(-scores, kind="stable")[:pick]]
                    best.append(float(np.min(secs[test]) / np.min(secs[picked])))
            if acc:
                rows[(n, model_name)] = (np.nanmean(acc), np.mean(recall), np.mean(best))
    return rows


def gemm1024_feature_time(reps: int = 30) -> tuple[float, float]:
    """Median ms to lower and to extract features of a 1024^3 GEMM candidate (tiled, parallel, vectorized)."""
    func, _, _ = gemm(1024)
    sch = Schedule(func)
    b = sch.get_block("C")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 32])
    j0, j1, j2 = sch.split(j, [None, 8, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, k1, j1, j2)
    sch.parallel(sch.fuse(i0, j0))
    sch.vectorize(j2)
    sch.decompose_reduction(b, k0)
    extractor = FEATURES.create("per_store", cache_size=0)
    low_ms, feat_ms = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        low = lower_for_features(sch.mod)
        t1 = time.perf_counter()
        extractor.from_lowered(low)
        low_ms.append((t1 - t0) * 1e3)
        feat_ms.append((time.perf_counter() - t1) * 1e3)
    return float(np.median(low_ms)), float(np.median(feat_ms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-workload", type=int, default=150, help="random schedules per workload")
    parser.add_argument("--splits", type=int, default=5, help="random 70/30 splits to average over")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database", help="a JSON-lines tuning database to read records from instead")
    parser.add_argument("--save-features", help="write the records' features and times to this .npz")
    parser.add_argument("--features", help="evaluate on features and times saved by --save-features")
    parser.add_argument("--train-sizes", default="16,32,48,64",
                        help="also train on this few records (random draws) and score the rest ('' to skip)")
    parser.add_argument("--draws", type=int, default=20, help="random draws per training size")
    parser.add_argument("--fresh", type=int, default=0,
                        help="with --database: also time this many fresh samples of each workload's space and "
                             "score them with models trained on all its records")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    start = time.perf_counter()
    if args.features:
        records, feats = load_features(args.features)
        lower_ms = feat_ms = float("nan")
    else:
        records = load_database(args.database) if args.database else generate_records(args.per_workload, args.seed)
    if not records:
        sys.exit("no workload with at least 10 records to evaluate on")
    for name, _ctx, schedules, secs, took in records:
        ok = np.isfinite(secs)
        print(f"{name}: {len(secs)} candidates, {int((~ok).sum())} failed, best {secs[ok].min() * 1e3:.3f} ms, "
              f"median {np.median(secs[ok]) * 1e3:.3f} ms, worst {secs[ok].max() * 1e3:.3f} ms"
              + (f", built and timed in {took:.1f} s" if took else ""))
    if not args.features:
        feats, lower_ms, feat_ms = extract_features(records)
    if args.save_features:
        save_features(args.save_features, records, feats)
    rows = evaluate(records, feats, args.splits, args.seed)
    n_train = sum(int(0.7 * len(r[3])) for r in records)
    print(f"\nfeatures: lowering {lower_ms:.2f} ms + extraction {feat_ms:.2f} ms per candidate (medians)")
    g_low, g_feat = gemm1024_feature_time()
    print(f"1024^3 GEMM candidate (tiled, parallel, vectorized): lowering {g_low:.2f} ms + extraction "
          f"{g_feat:.2f} ms (medians, cache off)")
    print(f"held-out 30%, {args.splits} splits, models trained on {n_train} records\n")
    print(f"{'model':<10} {'pairwise acc':>12} {'top-1 recall':>12} {'top-5 recall':>12} "
          f"{'train s':>8} {'predict ms/cand':>15}")
    for name, (acc, t1, t5, tr, pr) in rows.items():
        print(f"{name:<10} {acc:>12.3f} {t1:>12.3f} {t5:>12.3f} {tr:>8.3f} {pr:>15.4f}")
    sizes = [int(x) for x in args.train_sizes.split(",") if x.strip()]
    small = evaluate_small(records, feats, sizes, args.draws, args.seed) if sizes else {}
    if small:
        print(f"\ntrained on n records ({args.draws} random draws), scoring the rest; a batch = the model's 16 picks")
        print(f"{'n':>4} {'model':<10} {'pairwise acc':>12} {'top-16 recall':>13} {'batch best / true best':>22}")
        for (n, name), (acc, rec, best) in small.items():
            print(f"{n:>4} {name:<10} {acc:>12.3f} {rec:>13.3f} {best:>22.3f}")
    if args.fresh and args.database:
        fresh = fresh_records(records, args.fresh, args.seed)
        fresh_feats = extract_features(fresh)[0]
        rows = evaluate_fresh(records, feats, fresh, fresh_feats)
        print(f"\ntrained on every record, scoring {args.fresh} fresh samples per workload; times relative to the "
              f"best sample")
        print(f"{'model':<10} {'pairwise acc':>12} {'8 best-scored':>14} {'all samples':>12}")
        for name, (acc, top, every) in rows.items():
            print(f"{name:<10} {acc:>12.3f} {top:>14.2f} {every:>12.2f}")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
