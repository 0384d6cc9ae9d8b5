"""Designs shared across sequences (issue 16).

The cache key holds everything a design depends on; placing a design in a sequence is exact;
a cached, an uncached, a parallel and a Dask release are the same release; and every leakage
a report states is checked again on the whole sequence's mechanism, rebuilt by hand from the
report, with the exact rational evaluator (``redactopt.judge.exact``) and, for short
sequences, by enumerating every output.  Nothing here compares the code with its own earlier
output.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from redactopt.engine import cache as cache_mod
from redactopt.engine.cache import DesignCache, DesignKey, design_shape, far_start, reflect
from redactopt.judge.exact import certify_exact, exact_leakage_ratio
from redactopt.judge.leakage import sample_chains
from redactopt.model.chain import MarkovChain
from redactopt.release.apply import apply_table
from redactopt.release.data import ScanState
from redactopt.release.plan import plan_release, pool_map

ALPHA, BETA, EPS = 0.2, 0.4, 1.0
CHAIN = MarkovChain(ALPHA, BETA)
D = far_start(CHAIN, EPS)  # the far distance the planner starts from (20 for this chain)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------
def brute_leakage(alpha: float, beta: float, q: np.ndarray, p: int) -> float:
    """Definition 1 by enumeration: every chain path and every set of published records (n <= 11)."""
    n = q.shape[0]
    assert n <= 11
    S = 1 << n
    X = (np.arange(S)[:, None] >> np.arange(n)) & 1
    P = np.array([[1 - alpha, alpha], [beta, 1 - beta]])
    pi = np.array([beta, alpha]) / (alpha + beta)
    px = pi[X[:, 0]] * np.prod(P[X[:, :-1], X[:, 1:]], axis=1)
    qx = q[np.arange(n), X]  # redaction probability of each record given its value
    codes = np.arange(S)
    worst = 0.0
    for mask in range(S):
        pub = ((mask >> np.arange(n)) & 1).astype(bool)
        w = px * np.prod(np.where(pub, 1.0 - qx, qx), axis=1)
        y = codes & mask  # the published values: what the output shows
        given = [np.bincount(y[X[:, p] == x], weights=w[X[:, p] == x], minlength=S) / pi[x] for x in (0, 1)]
        seen = (given[0] > 0) | (given[1] > 0)
        if not seen.any():
            continue
        if ((given[0] == 0) | (given[1] == 0))[seen].any():
            return math.inf
        worst = max(worst, float(np.abs(np.log(given[0][seen] / given[1][seen])).max()))
    return worst


def exact_ratio(q: np.ndarray, p: int) -> Fraction:
    """exp(leakage) about record p, in rational arithmetic (n <= 64)."""
    return exact_leakage_ratio(ALPHA, BETA, q.tolist(), p)


def shape_rows(shape) -> np.ndarray:
    """A shape's mechanism on its sub-problem, dense."""
    q = np.zeros((shape.key.n, 2))
    rows = shape.design.redact_prob
    for s, b in zip(rows.starts, rows.blocks):
        q[s : s + b.shape[0]] = b
    return q


def aligned(shape, before: int = 30, after: int = 30) -> np.ndarray:
    """The shape's rows around its first private record (rows beyond the sub-problem published)."""
    q = np.zeros((before + 1 + after, 2))
    own = shape_rows(shape)
    first = shape.key.left
    lo = max(0, first - before)
    q[before - (first - lo) : before - (first - lo) + own.shape[0] - lo] = own[lo : lo + min(own.shape[0] - lo,
                                                                                          before + 1 + after)]
    return q


def mechanism_from_report(rep: dict, row: dict) -> np.ndarray:
    """A sequence's whole mechanism, rebuilt by hand from a report: its groups' shapes (the sparse
    mechanism file of each shape's sub-problem) placed at their first private record, and the
    records always redacted before and after each shape."""
    q = np.zeros((row["n"], 2))
    for g in row["groups"]:
        shape = rep["shapes"][g["shape"]]
        mech, key = shape["mechanism"], shape["key"]
        origin = g["first"] - 1 - key["left"]  # 0-based sequence row of the sub-problem's row 0
        for b in mech["blocks"]:
            rows = np.asarray(b["redact_prob"], dtype=float)
            start = origin + b["start"] - 1
            lo = max(start, 0)
            hi = min(start + rows.shape[0], row["n"])
            q[lo:hi] = rows[lo - start : hi - start]
        before, after = g["wipe"]
        if before:
            q[origin - before : origin] = 1.0
        if after:
            q[origin + key["n"] : origin + key["n"] + after] = 1.0
    return q


# --------------------------------------------------------------------------
# the key: every component matters, distances beyond the far one do not
# --------------------------------------------------------------------------
BASE = DesignKey(CHAIN, EPS, "auto", 60.0, (0, 2), 2, 2)
PERTURBED = {
    "chain": DesignKey(MarkovChain(0.25, 0.4), EPS, "auto", 60.0, (0, 2), 2, 2),
    "eps": DesignKey(CHAIN, 0.5, "auto", 60.0, (0, 2), 2, 2),
    "method": DesignKey(CHAIN, EPS, "dim", 60.0, (0, 2), 2, 2),
    "private offsets": DesignKey(CHAIN, EPS, "auto", 60.0, (0, 3), 2, 2),
    "left": DesignKey(CHAIN, EPS, "auto", 60.0, (0, 2), 1, 2),
    "right": DesignKey(CHAIN, EPS, "auto", 60.0, (0, 2), 2, 1),
}


@pytest.fixture(scope="module")
def base_shape():
    return design_shape(BASE)


@pytest.mark.parametrize("component", list(PERTURBED))
def test_each_component_of_the_key_changes_the_design(component, base_shape):
    other = design_shape(PERTURBED[component])
    assert not np.array_equal(aligned(base_shape), aligned(other)), component
    # both are what their keys promise: private about every private record, by enumeration
    for shape in (base_shape, other):
        chain = shape.key.chain
        q = shape_rows(shape)
        for p, v in zip(shape.key.positions, shape.design.per_private):
            brute = brute_leakage(chain.alpha, chain.beta, q, p)
            assert brute <= shape.key.eps + 1e-12
            assert brute == pytest.approx(v, abs=1e-9)


def test_the_key_refuses_what_is_no_group():
    with pytest.raises(ValueError, match="start at 0"):
        DesignKey(CHAIN, EPS, "auto", 60.0, (1, 2), 0, 0)
    with pytest.raises(ValueError, match="sorted and distinct"):
        DesignKey(CHAIN, EPS, "auto", 60.0, (0, 0), 0, 0)
    with pytest.raises(ValueError, match=">= 0"):
        DesignKey(CHAIN, EPS, "auto", 60.0, (0,), -1, 0)


def _plan_of(lengths_and_private: list[tuple[int, list[int]]]):
    """The plan of sequences ``s0, s1, ...`` with the given lengths and private records (values: zeros)."""
    ids = np.concatenate([np.full(n, f"s{i}", dtype=object) for i, (n, _) in enumerate(lengths_and_private)])
    flags = np.concatenate([np.isin(np.arange(n), priv).astype(np.int8) for n, priv in lengths_and_private])
    state = ScanState.of_chunk(np.zeros(ids.size, dtype=np.int8), ids, flags)
    return plan_release(state, eps=EPS, alpha=ALPHA, beta=BETA, workers=1)


def test_distances_beyond_the_far_one_do_not_change_the_design_nor_the_exact_leakage():
    # one private record, both distances to the ends at least D, in sequences of different lengths
    seqs = [(64, [D + 2]), (61, [D + 2]), (2 * D + 1, [D]), (64, [40]), (58, [D + 9])]
    plan = _plan_of(seqs)
    assert len(plan.shapes) == 1  # one key for all of them
    key = plan.shapes[0].key
    assert (key.private, key.left, key.right) == ((0,), D, D)
    ratios, rows = set(), set()
    for c, (n, priv) in enumerate(seqs):
        q = np.asarray(plan.sparse_rows(c))
        p = priv[0]
        rows.add(q[p - 10 : p + 11].tobytes())
        assert not q[: p - 10].any() and not q[p + 11 :].any()  # the rest is published
        ratios.add(exact_ratio(q, p))
    assert len(rows) == 1 and len(ratios) == 1  # the same mechanism and the same exact leakage
    (ratio,) = ratios
    assert math.log(ratio) == pytest.approx(plan.per_private(0)[0], abs=1e-12)
    assert certify_exact(ALPHA, BETA, np.asarray(plan.sparse_rows(0)).tolist(), [seqs[0][1][0]], EPS).status == "certified"


def test_two_sequences_with_the_same_key_have_the_same_exact_leakage():
    # near the left end (the wipe-left key), the right ends at different distances beyond D
    seqs = [(64, [3]), (40, [3]), (30, [3]), (64, [3, 4]), (50, [3, 4])]
    plan = _plan_of(seqs)
    shape_of = [tuple(int(plan.g_shape[g]) for g in plan.groups_of(c)) for c in range(len(seqs))]
    assert shape_of[0] == shape_of[1] == shape_of[2] and shape_of[3] == shape_of[4] and shape_of[0] != shape_of[3]
    for a, b in ((0, 1), (0, 2), (3, 4)):
        qa, qb = np.asarray(plan.sparse_rows(a)), np.asarray(plan.sparse_rows(b))
        for p in seqs[a][1]:
            ra, rb = exact_ratio(qa, p), exact_ratio(qb, p)
            assert ra == rb
            assert math.log(ra) == pytest.approx(plan.per_private(a)[seqs[a][1].index(p)], abs=1e-12)


def test_independent_records_release_many_sequences_without_side_tables():
    # alpha + beta = 1: the records are independent, nothing but a private record says anything about it
    seqs = [(30, [0]), (30, [29]), (12, [5, 6]), (50, [25]), (4, [1])]
    ids = np.concatenate([np.full(n, f"s{i}", dtype=object) for i, (n, _) in enumerate(seqs)])
    flags = np.concatenate([np.isin(np.arange(n), priv).astype(np.int8) for n, priv in seqs])
    state = ScanState.of_chunk(np.zeros(ids.size, dtype=np.int8), ids, flags)
    plan = plan_release(state, eps=EPS, alpha=0.5, beta=0.5, workers=1)
    for c, (n, priv) in enumerate(seqs):
        q = np.asarray(plan.sparse_rows(c))
        assert np.array_equal(np.flatnonzero(q.any(axis=1)), priv) and (q[priv] == 1).all()
        for p in priv:
            assert exact_leakage_ratio("0.5", "0.5", q.tolist(), p) == 1
        assert plan.upper_bound[c] == pytest.approx(n - len(priv))


# --------------------------------------------------------------------------
# mirror images
# --------------------------------------------------------------------------
def test_a_mirrored_key_gets_the_reflection_and_it_is_exactly_private():
    key = DesignKey(CHAIN, EPS, "auto", 60.0, (0, 2), 1, 3)
    mirror = key.mirror()
    assert (mirror.private, mirror.left, mirror.right) == ((0, 2), 3, 1)
    assert key.canonical()[0] == mirror.canonical()[0] and key.canonical()[1] != mirror.canonical()[1]
    own = design_shape(key)
    refl = reflect(own, mirror)
    q, r = shape_rows(own), shape_rows(refl)
    assert np.array_equal(r, q[::-1])
    # time reversal: the same exact ratios, private records read backwards
    for p, pr in zip(key.positions, reversed(mirror.positions)):
        assert exact_ratio(q, p) == exact_ratio(r, pr)
    for pr, v in zip(mirror.positions, refl.design.per_private):
        assert brute_leakage(ALPHA, BETA, r, pr) == pytest.approx(v, abs=1e-9)
        assert v <= EPS
    # the cache designs one of the two and reflects the other
    cache = DesignCache()
    a, b = cache.fetch([key, mirror])
    assert cache.computed == 1 and a.key == key and b.key == mirror
    assert np.array_equal(shape_rows(b), shape_rows(a)[::-1])
    with pytest.raises(ValueError, match="mirror image"):
        reflect(own, key.with_ends(2, 2))


# --------------------------------------------------------------------------
# releases: cached, uncached, 1 or 2 workers, Dask
# --------------------------------------------------------------------------
def _specs() -> list[tuple[int, list[int]]]:
    """Sequences (length, 0-based private records): shorter than the window, private records at the
    ends, adjacent and close ones, far ones at distances beyond D, one with none."""
    return [
        (3, [1]), (5, [0]), (8, [7]), (12, [0, 11]), (15, [6, 7]),
        (64, [0]), (64, [1]), (64, [63]), (64, [62]), (64, [0, 1]), (63, [61, 62]),
        (64, [30, 31]), (64, [20, 23]), (64, [10, 40]), (60, [5, 6, 7]),
        (64, [D + 2]), (61, [D + 2]), (58, [D + 9]), (50, [24]),
        (40, []), (9, [4]), (64, [2, 60]),
    ]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("many")
    rng = np.random.default_rng(16)
    frames = []
    for i, (n, priv) in enumerate(_specs()):
        x = sample_chains(CHAIN, n, 1, rng)[0].astype(np.int64)
        frames.append(pd.DataFrame({"sid": f"s{i:02d}", "t": np.arange(n), "x": x,
                                    "opt": np.isin(np.arange(n), priv).astype(np.int64)}))
    df = pd.concat(frames, ignore_index=True)
    df.to_csv(folder / "many.csv", index=False)
    df.to_parquet(folder / "many.parquet", index=False)
    return folder


KW = dict(column="x", eps=EPS, alpha=ALPHA, beta=BETA, private_column="opt", by="sid", seed=7)


@pytest.fixture(scope="module")
def cached(dataset):
    rep = apply_table(dataset / "many.csv", dataset / "cached.csv", report=dataset / "cached.json",
                      cache=DesignCache(), workers=1, report_sequences="jsonl", **KW)
    rows = [json.loads(line) for line in (dataset / "cached.sequences.jsonl").read_text().splitlines()]
    return rep, rows


def _without_timings(rep: dict) -> dict:
    out = {k: v for k, v in rep.items() if k not in ("design_seconds", "apply_seconds", "designs", "output",
                                                     "sequences_file", "sequences_format")}
    out["shapes"] = [{k: v for k, v in s.items() if k != "design_info"} for s in rep["shapes"]]
    return out


def test_cached_and_uncached_releases_are_identical(dataset, cached):
    rep, rows = cached
    un = apply_table(dataset / "many.csv", dataset / "uncached.csv", report=dataset / "uncached.json",
                     cache=DesignCache(share=False), workers=1, report_sequences="parquet", **KW)
    assert (dataset / "cached.csv").read_bytes() == (dataset / "uncached.csv").read_bytes()
    assert _without_timings(rep) == _without_timings(un)
    assert pq.read_table(dataset / "uncached.sequences.parquet").to_pylist() == rows
    # the cache shared designs; without it every group was designed on its own
    assert rep["designs"]["shared"] and not un["designs"]["shared"]
    assert rep["designs"]["computed"] < un["designs"]["computed"]
    assert rep["designs"]["shapes"] < rep["designs"]["groups"]
    # the release drew: some records with 0 < q < 1 were redacted and some published
    assert 0 < rep["utility"]["redacted"] < rep["rows"]


def test_every_reported_leakage_holds_on_the_whole_sequence(dataset, cached):
    rep, rows = cached
    specs = _specs()
    df = pd.read_csv(dataset / "many.csv")
    out = pd.read_csv(dataset / "cached.csv")
    assert len(rows) == len(specs) and rep["sequences_file"] == "cached.sequences.jsonl"
    checked = brute = 0
    fractional = False
    for i, row in enumerate(rows):
        n, priv = specs[i]
        assert row["id"] == f"s{i:02d}" and row["n"] == n and row["private"] == [p + 1 for p in priv]
        sel = (df["sid"] == row["id"]).to_numpy()
        x, y = df.loc[sel, "x"].to_numpy(), out.loc[sel, "x"].to_numpy()
        if not priv:
            assert row["groups"] == [] and not np.isnan(y).any()
            continue
        q = mechanism_from_report(rep, row)
        fractional |= bool(((q > 0) & (q < 1)).any())
        # the released column: published values are the input's, redactions only where q > 0
        red = np.isnan(y)
        assert np.array_equal(y[~red], x[~red])
        assert (q[np.arange(n), x][red] > 0).all() and red[q[np.arange(n), x] == 1.0].all()
        assert red.sum() == row["redacted"]
        # the blocks the row names hold every row the rebuilt mechanism may redact
        named = np.concatenate([np.arange(a - 1, b) for a, b in row["blocks"]])
        assert set(np.flatnonzero(q.any(axis=1))) <= set(named)
        for entry, p in zip(row["leakage"], priv):
            assert entry["private"] == p + 1
            r = exact_ratio(q, p)
            assert math.log(r) == pytest.approx(entry["leakage"], abs=1e-12)
            checked += 1
            if n <= 11:
                assert brute_leakage(ALPHA, BETA, q, p) == pytest.approx(entry["leakage"], abs=1e-9)
                brute += 1
        assert certify_exact(ALPHA, BETA, q.tolist(), priv, EPS).status == "certified"
        assert row["leakage_max"] == max(e["leakage"] for e in row["leakage"])
    assert checked == sum(len(p) for _, p in specs) and brute == sum(len(p) for n, p in specs if n <= 11)
    assert fractional  # the mechanisms draw (0 < q < 1 somewhere), not only publish or redact
    assert rep["leakage"]["max"] == max(r["leakage_max"] for r in rows if r["leakage_max"] is not None) <= EPS


def test_the_worker_count_does_not_change_the_release(dataset, cached, monkeypatch):
    rep, rows = cached
    here = []
    real = cache_mod.design_joint_sparse

    def counted(*args, **kwargs):  # designs run in this process (the pool's workers have their own)
        here.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cache_mod, "design_joint_sparse", counted)
    two = apply_table(dataset / "many.csv", dataset / "two.csv", report=dataset / "two.json",
                      cache=DesignCache(), workers=2, report_sequences="jsonl", **KW)
    assert (dataset / "two.csv").read_bytes() == (dataset / "cached.csv").read_bytes()
    assert _without_timings(two) == _without_timings(rep)
    assert [json.loads(x) for x in (dataset / "two.sequences.jsonl").read_text().splitlines()] == rows
    assert len(here) < two["designs"]["computed"]  # the pool's worker designed some of them


def test_pool_map_returns_results_in_order():
    with pool_map(2) as run:
        got = run(pow, [(b, 2) for b in range(40)])
    assert got == [b * b for b in range(40)]
    with pytest.raises(ValueError, match="workers"):
        with pool_map(0):
            pass


def test_the_dask_release_of_a_partitioned_dataset_is_the_in_memory_release(dataset, cached, tmp_path):
    pytest.importorskip("dask", reason="the optional 'dask' extra is not installed")
    distributed = pytest.importorskip("distributed", reason="the optional 'dask' extra is not installed")
    from redactopt.release.dask_backend import apply_dask

    table = pq.read_table(dataset / "many.parquet")
    folder = tmp_path / "ds"
    folder.mkdir()
    cuts = [0, 100, 333, 700, table.num_rows]  # partitions cut through sequences
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        pq.write_table(table.slice(a, b - a), folder / f"part.{i}.parquet")
    mem = apply_table(dataset / "many.parquet", tmp_path / "mem.parquet", report=tmp_path / "mem.json",
                      report_sequences="jsonl", **KW)
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        dsk = apply_dask(folder, tmp_path / "out", report=tmp_path / "dask.json", report_sequences="jsonl", **KW)
    assert dsk["partitions"] == 4
    a = pq.read_table(tmp_path / "mem.parquet")
    b = pa.concat_tables([pq.read_table(f) for f in sorted((tmp_path / "out").glob("part.*.parquet"))])
    assert a.equals(b.cast(a.schema))
    assert _without_timings({k: v for k, v in mem.items() if k not in ("input",)}) == \
        _without_timings({k: v for k, v in dsk.items() if k not in ("input", "backend", "dataset_format",
                                                                     "partitions")})
    rows_mem = (tmp_path / "mem.sequences.jsonl").read_text()
    assert rows_mem == (tmp_path / "dask.sequences.jsonl").read_text()
    # and the CSV release of the same rows draws the same records
    cached_out = pd.read_csv(dataset / "cached.csv")
    assert np.array_equal(cached_out["x"].isna().to_numpy(), a.column("x").is_null().to_numpy(zero_copy_only=False))


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------
def test_cli_apply_many_sequences(dataset, cached, tmp_path, run, capsys):
    args = ["apply", str(dataset / "many.csv"), "--column", "x", "--by", "sid", "--private-column", "opt",
            "--eps", "1", "--alpha", str(ALPHA), "--beta", str(BETA), "--seed", "7", "--quiet"]
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    assert run(args + ["--out", str(out), "--report", str(rep), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    summary = json.loads(rep.read_text())
    d = summary["designs"]
    assert (f"designs   : {d['shapes']} distinct for {d['groups']} group(s) of private records in "
            f"{summary['designed_sequences']} sequence(s), {d['groups'] - d['shapes']} group(s) sharing one; "
            f"{d['computed'] + d['reflected']} candidate design(s) verified ({d['computed']} computed, "
            f"{d['reflected']} as mirror images)") in text
    assert d["reflected"] >= 1 and d["shapes"] < d["groups"]  # mirror images made, designs shared
    assert summary["sequences_file"] == "r.sequences.parquet" and "(sequences: r.sequences.parquet)" in text
    assert out.read_bytes() == (dataset / "cached.csv").read_bytes()  # the library's release, same seed
    rows = pq.read_table(tmp_path / "r.sequences.parquet").to_pylist()
    assert [r["id"] for r in rows] == [f"s{i:02d}" for i in range(len(_specs()))]


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "--workers must be >= 1"),
    (["--workers", "-3"], "--workers must be >= 1"),
    (["--workers", "two"], "invalid int value"),
    (["--backend", "dask", "--workers", "2"], "--workers"),
    (["--report-sequences", "parquet"], "writes a file beside the report: give --report FILE"),
    (["--report-sequences", "jsonl", "--report", "-"], "give --report FILE"),
    (["--report-sequences", "csv"], "invalid choice"),
])
def test_cli_apply_refuses_bad_values(dataset, tmp_path, run, capsys, extra, message):
    args = ["apply", str(dataset / "many.csv"), "--column", "x", "--by", "sid", "--private-column", "opt",
            "--eps", "1", "--alpha", str(ALPHA), "--beta", str(BETA), "--out", str(tmp_path / "o.csv"), "--quiet"]
    assert run(args + extra) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("extra, message", [(["--report-sequences", "jsonl"], "--report-sequences")])
def test_cli_categorical_apply_refuses_the_many_sequence_options(dataset, tmp_path, run, capsys, extra, message):
    """(A categorical release streams like a 0/1 one, so it takes --chunk-rows; its report lists every sequence.)"""
    args = ["apply", str(dataset / "many.csv"), "--column", "x", "--categorical", "--private", "3", "--eps", "1",
            "--out", str(tmp_path / "o.csv"), "--report", str(tmp_path / "r.json"), "--quiet"]
    assert run(args + extra) == 2
    err = capsys.readouterr().err
    assert message in err and "categorical" in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_cli_apply_help_explains_the_new_options(run, capsys):
    assert run(["apply", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--workers N processes computing designs at once" in text and "the release is the same for every N" in text
    assert "--report-sequences" in text and "written in batches" in text
