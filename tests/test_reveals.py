"""Everything a release reveals is hidden or stated (issue 36), on a data engineer's table (``homes.make_homes``).

Independent checks: files are read back with pyarrow and as bytes, not with redactopt's reader; the
refusals are checked from the command line (exit 2, one line on stderr, no file left in the folder)
and from the library (``ReleaseRefused``), each override by what the release then holds; the broken-
model refusal is justified independently — a likelihood ratio computed here, by a forward pass over
the pairs of a second-order chain fitted here by hand, on one output of the released mechanism,
exceeds eps; the public report is searched for every sequence id and private position field.
"""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from homes import ALPHA, BETA, make_homes
from redactopt.errors import ReleaseRefused
from redactopt.release.apply import apply_table
from redactopt.release.frame import apply_frame

CONFIDENTIAL = "CONFIDENTIAL: names the private rows — do not publish with the release"
GIVEN = ["--alpha", str(ALPHA), "--beta", str(BETA)]
BASE = ["--column", "occupied", "--by", "home", "--private-column", "optout", "--eps", "1", "--seed", "3"]


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    d = tmp_path_factory.mktemp("homes")
    ordered = make_homes(days=1, shuffle=False)
    ordered.to_csv(d / "homes.csv", index=False)
    ordered.to_parquet(d / "homes.parquet")  # pandas writes its schema metadata: every column named
    make_homes(days=1, shuffle=True).to_csv(d / "shuffled.csv", index=False)
    return d, ordered


def _cli(run, capsys, *argv):
    code = run(list(map(str, argv)))
    out = capsys.readouterr()
    return code, out.out, out.err


def _refused_from_the_cli(run, capsys, tmp_path, *argv):
    """exit 2, one line on stderr, and nothing written in the output folder."""
    out_dir = tmp_path / "out"
    out_dir.mkdir(exist_ok=True)
    before = set(out_dir.iterdir())
    code, _, err = _cli(run, capsys, "apply", *argv, "--out", out_dir / "o.csv", "--report", out_dir / "r.json",
                        "--public-report", out_dir / "p.json", "--html", out_dir / "page.html")
    assert code == 2 and err.count("\n") == 1 and err.startswith("redactopt apply: error: "), err
    assert set(out_dir.iterdir()) == before
    return err


# --------------------------------------------------------------------------
# refusals: the private flag is the protected column
# --------------------------------------------------------------------------
def test_a_flag_that_is_the_protected_column_is_refused(homes, run, capsys, tmp_path):
    d, df = homes
    err = _refused_from_the_cli(run, capsys, tmp_path, d / "homes.csv", "--column", "occupied", "--by", "home",
                                "--private-column", "occupied", "--eps", "1", *GIVEN)
    assert "is the protected column" in err and "void guarantee" in err
    with pytest.raises(ReleaseRefused, match="is the protected column"):
        apply_table(d / "homes.csv", tmp_path / "o.csv", column="occupied", by="home", private_column="occupied",
                    eps=1.0, alpha=ALPHA, beta=BETA)
    with pytest.raises(ReleaseRefused, match="is the protected column"):
        apply_frame(df, column="occupied", by="home", private_column="occupied", eps=1.0, alpha=ALPHA, beta=BETA)
    err = _refused_from_the_cli(run, capsys, tmp_path, d / "homes.csv", "--protect", "occupied,optout", "--by",
                                "home", "--private-column", "optout", "--eps", "1")
    assert "--private-column optout is the protected column" in err
    assert not (tmp_path / "o.csv").exists()


# --------------------------------------------------------------------------
# refusals: rows out of time order
# --------------------------------------------------------------------------
def test_a_shuffled_table_is_refused_and_each_override_works(homes, run, capsys, tmp_path):
    d, df = homes
    err = _refused_from_the_cli(run, capsys, tmp_path, d / "shuffled.csv", *BASE)
    assert "rows out of time order: column 'ts' goes back in time" in err and "--order-by ts" in err
    with pytest.raises(ReleaseRefused, match="column 'ts' goes back in time"):
        apply_table(d / "shuffled.csv", tmp_path / "o.csv", column="occupied", by="home", private_column="optout",
                    eps=1.0)
    with pytest.raises(ReleaseRefused, match="--order-by ts"):
        apply_frame(make_homes(days=1, shuffle=True), column="occupied", by="home", private_column="optout", eps=1.0)
    # --order-by: the chain of the ordered file, counted here by hand (every transition of every home)
    rep = apply_table(d / "shuffled.csv", tmp_path / "a.csv", column="occupied", by="home", private_column="optout",
                      eps=1.0, order_by="ts", fit_on=d / "homes.csv", seed=3)
    pairs = np.zeros((2, 2), dtype=int)
    for _, g in df.groupby("home"):
        x = g["occupied"].to_numpy()
        np.add.at(pairs, (x[:-1], x[1:]), 1)
    assert rep["chain"]["fit"]["counts"] == {f"{i}{j}": int(pairs[i, j]) for i in (0, 1) for j in (0, 1)}
    assert "MODEL ACCEPTED" not in rep["notice"]
    # --accept-model: released as it is, and the report's first line says so
    code, out, _ = _cli(run, capsys, "apply", d / "shuffled.csv", *BASE, "--accept-model", "--out", tmp_path / "b.csv",
                        "--report", tmp_path / "b.json")
    assert code == 0
    first = (tmp_path / "b.json").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith('{"notice": "' + CONFIDENTIAL + "; MODEL ACCEPTED (--accept-model): rows out of time "
                            "order (column 'ts' goes back in time")
    assert out.startswith("WARNINGS  :") and "released although (--accept-model): rows out of time order" in \
        out.split("wrote     :")[0].replace("\n    ", " ")


def test_a_numeric_time_column_out_of_order_is_refused_and_others_are_not(homes, tmp_path):
    _, df = homes
    minutes = df.assign(minute=(df["ts"] - df["ts"].min()).dt.total_seconds() // 60).drop(columns="ts")
    shuffled = minutes.sample(frac=1.0, random_state=2).reset_index(drop=True)
    shuffled.to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(ReleaseRefused, match="column 'minute' goes back in time"):
        apply_table(tmp_path / "m.csv", tmp_path / "o.csv", column="occupied", by="home", private_column="optout",
                    eps=1.0, alpha=ALPHA, beta=BETA)
    # homes interleaved row by row, each in time order: nothing goes back within a sequence
    interleaved = df.sort_values(["ts", "home"], kind="stable").reset_index(drop=True)
    interleaved.to_csv(tmp_path / "i.csv", index=False)
    rep = apply_table(tmp_path / "i.csv", tmp_path / "o2.csv", column="occupied", by="home", private_column="optout",
                      eps=1.0, alpha=ALPHA, beta=BETA, keep=["power_w"], seed=1)
    assert rep["model"]["accepted"] == []  # power_w is far from sorted, but it is no time column


# --------------------------------------------------------------------------
# refusals: a broken model (order test p < 1e-6 and an alternative that leaks more than eps)
# --------------------------------------------------------------------------
#: Pr(X_t = 1 | X_{t-2}, X_{t-1}): a fresh change is likely undone (a second-order dependence).
FLICKER = np.array([[0.02, 0.7], [0.5, 0.97]])


def _second_order_values(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros(n, dtype=np.int64)
    u = rng.random(n)
    for t in range(2, n):
        x[t] = u[t] < FLICKER[x[t - 2], x[t - 1]]
    return x


def _ratio_all_redacted(kernel: np.ndarray, q: np.ndarray, p: int, ends: tuple[int, int, int, int]) -> float:
    """log Pr(y | X_p = 1) / Pr(y | X_p = 0) under a second-order chain for the output y: two published records
    (ends[0], ends[1]), every row of ``q`` redacted, two published records (ends[2], ends[3])."""
    mu = np.full((2, 2), 0.25)
    for _ in range(4000):  # the stationary law of the pairs, by iteration
        new = np.zeros((2, 2))
        for a, b, c in itertools.product((0, 1), repeat=3):
            new[b, c] += mu[a, b] * kernel[a, b, c]
        mu = new
    joint = []
    for xp in (0, 1):
        f = {(ends[0], ends[1]): mu[ends[0], ends[1]]}
        for t, obs in enumerate([None] * q.shape[0] + [ends[2], ends[3]]):
            g: dict = {}
            for (a, b), v in f.items():
                for c in (0, 1):
                    if obs is None:
                        e = 0.0 if (t == p and c != xp) else q[t, c]
                    else:
                        e = float(c == obs)
                    if e:
                        g[(b, c)] = g.get((b, c), 0.0) + v * kernel[a, b, c] * e
            f = g
        joint.append(sum(f.values()) / mu[:, xp].sum())
    return math.log(joint[1] / joint[0])


def test_a_broken_model_is_refused_and_accepted_only_when_asked(run, capsys, tmp_path):
    x, public = _second_order_values(20000, 1), _second_order_values(20000, 2)
    pd.DataFrame({"x": x}).to_csv(tmp_path / "so.csv", index=False)
    pd.DataFrame({"x": public}).to_csv(tmp_path / "public.csv", index=False)
    argv = [tmp_path / "so.csv", "--column", "x", "--private", "10001", "--eps", "1", "--fit-on",
            tmp_path / "public.csv"]
    err = _refused_from_the_cli(run, capsys, tmp_path, *argv)
    assert "broken model" in err and "second-order chain" in err and "--accept-model" in err
    with pytest.raises(ReleaseRefused, match="broken model"):
        apply_table(tmp_path / "so.csv", tmp_path / "o.csv", column="x", private=[10000], eps=1.0,
                    fit_on=tmp_path / "public.csv")
    rep = apply_table(tmp_path / "so.csv", tmp_path / "o.csv", column="x", private=[10000], eps=1.0, seed=1,
                      fit_on=tmp_path / "public.csv", accept_model=True, report=tmp_path / "r.json")
    alt = rep["model"]["alternatives"][0]
    assert alt["name"] == "second-order chain" and alt["p_value"] < 1e-6 and alt["exceeds_eps"] is True
    assert rep["notice"].startswith(CONFIDENTIAL + "; MODEL ACCEPTED (--accept-model): the likelihood-ratio test")
    assert json.loads((tmp_path / "r.json").read_text())["notice"] == rep["notice"]
    # independently: one output of the released mechanism, under the second-order chain fitted here, leaks > eps
    n = np.zeros((2, 2, 2))
    np.add.at(n, (public[:-2], public[1:-1], public[2:]), 1)
    kernel = (n + 0.5) / (n.sum(axis=2, keepdims=True) + 1.0)
    (block,) = rep["mechanism"]["blocks"]
    q = np.asarray(block["redact_prob"])
    p = 10000 - (block["start"] - 1)
    best = max(abs(_ratio_all_redacted(kernel, q, p, e)) for e in itertools.product((0, 1), repeat=4))
    assert 1.0 < best <= alt["leakage"] + 1e-9


def test_a_first_order_table_is_judged_and_released(homes, tmp_path):
    d, _ = homes
    rep = apply_table(d / "homes.csv", tmp_path / "o.csv", column="occupied", by="home", private_column="optout",
                      eps=1.0, seed=1)
    (alt,) = rep["model"]["alternatives"]
    assert alt["p_value"] >= 1e-6 and alt["leakage"] is None and alt["note"].startswith("not judged: p >=")


# --------------------------------------------------------------------------
# refusals: states never observed in the fit
# --------------------------------------------------------------------------
def _levels(df: pd.DataFrame) -> pd.DataFrame:
    """The homes with a power draw that never crosses 200 W against its occupancy: 0|>=200 and 1|<200 never occur."""
    rng = np.random.default_rng(7)
    return df.assign(power_w=np.where(df["occupied"] == 1, 350.0, 60.0) + rng.normal(0.0, 10.0, len(df)))


def test_unseen_states_are_refused_and_each_override_works(homes, run, capsys, tmp_path):
    _, df = homes
    _levels(df).to_csv(tmp_path / "lv.csv", index=False)
    argv = [tmp_path / "lv.csv", "--protect", "occupied,power_w", "--bin", "power_w:200", "--by", "home",
            "--private-column", "optout", "--eps", "1", "--method", "dim"]
    err = _refused_from_the_cli(run, capsys, tmp_path, *argv)
    assert "2 state(s) of the chain never observed in the fit ('0|>=200', '1|<200'" in err
    assert "--transition" in err and "--accept-model" in err
    kw = dict(protect=["occupied", "power_w"], bins=["power_w:200"], by="home", private_column="optout", eps=1.0,
              method="dim")
    with pytest.raises(ReleaseRefused, match="never observed in the fit"):
        apply_table(tmp_path / "lv.csv", tmp_path / "o.csv", **kw)
    # a given chain: nothing is guessed
    chain = tmp_path / "chain.json"
    P = [[0.97, 0.01, 0.01, 0.01], [0.01, 0.97, 0.01, 0.01], [0.01, 0.01, 0.97, 0.01], [0.01, 0.01, 0.01, 0.97]]
    chain.write_text(json.dumps({"transition": P, "labels": ["0|<200", "0|>=200", "1|<200", "1|>=200"]}))
    code, _, err = _cli(run, capsys, "apply", *argv, "--transition", chain, "--out", tmp_path / "a.csv",
                        "--report", tmp_path / "a.json", "--quiet")
    assert code == 0, err
    assert json.loads((tmp_path / "a.json").read_text())["model"]["accepted"] == []
    # --accept-model: the uniform rows, stated on the report's first line
    rep = apply_table(tmp_path / "lv.csv", tmp_path / "b.csv", accept_model=True, seed=1, **kw)
    assert "MODEL ACCEPTED (--accept-model): 2 state(s) of the chain never observed in the fit" in rep["notice"]
    rows = np.asarray(rep["chain"]["fit"]["counts"]).sum(axis=1)
    assert (rows == 0).sum() == 2  # the two states, recounted from the report's own transition counts


# --------------------------------------------------------------------------
# companions leak nothing: metadata and bytes of the columns written only
# --------------------------------------------------------------------------
DROPPED = [b"optout", b"power_w", b"ts"]


def test_parquet_release_keeps_only_the_written_columns_metadata(homes, tmp_path):
    d, _ = homes
    assert b"optout" in pq.read_metadata(d / "homes.parquet").metadata[b"pandas"]  # the input names every column
    apply_table(d / "homes.parquet", tmp_path / "o.parquet", column="occupied", by="home", private_column="optout",
                eps=1.0, alpha=ALPHA, beta=BETA, seed=1)
    md = pq.read_metadata(tmp_path / "o.parquet")
    assert md.schema.to_arrow_schema().names == ["home", "occupied"]
    for key, value in (md.metadata or {}).items():
        for name in DROPPED:
            assert name not in key and name not in value, (key, name)
    pandas_md = json.loads(md.metadata[b"pandas"])
    assert [c["name"] for c in pandas_md["columns"]] == ["home", "occupied"]
    raw = (tmp_path / "o.parquet").read_bytes()
    assert not any(name in raw for name in DROPPED)
    # a kept column is written with its metadata, the others still not
    apply_table(d / "homes.parquet", tmp_path / "k.parquet", column="occupied", by="home", private_column="optout",
                eps=1.0, alpha=ALPHA, beta=BETA, seed=1, keep=["power_w"])
    raw = (tmp_path / "k.parquet").read_bytes()
    assert b"power_w" in raw and b"optout" not in raw and b'"ts"' not in raw
    assert pd.read_parquet(tmp_path / "k.parquet").columns.tolist() == ["home", "occupied", "power_w"]


@pytest.mark.parametrize("keep", [None, "all"])
def test_csv_release_bytes_name_only_the_columns_written(homes, tmp_path, keep):
    d, _ = homes
    apply_table(d / "homes.csv", tmp_path / "o.csv", column="occupied", by="home", private_column="optout", eps=1.0,
                alpha=ALPHA, beta=BETA, seed=1, keep=keep)
    raw = (tmp_path / "o.csv").read_bytes()
    assert b"optout" not in raw
    assert all(name not in raw for name in DROPPED) if keep is None else b"power_w" in raw


def test_an_arrow_table_released_in_memory_keeps_only_the_written_columns_metadata(homes):
    _, df = homes
    table = pa.Table.from_pandas(df)
    assert b"optout" in table.schema.metadata[b"pandas"]
    released, _ = apply_frame(table, column="occupied", by="home", private_column="optout", eps=1.0, alpha=ALPHA,
                              beta=BETA, seed=1)
    assert released.column_names == ["home", "occupied"]
    for value in (released.schema.metadata or {}).values():
        assert not any(name in value for name in DROPPED)


# --------------------------------------------------------------------------
# companions: the report, the page, the public report
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def released(homes, tmp_path_factory):
    d, _ = homes
    out = tmp_path_factory.mktemp("released")
    from redactopt.interface import cli

    code = cli.main(["apply", str(d / "homes.csv"), *BASE, *GIVEN, "--out", str(out / "o.csv"), "--report",
                     str(out / "r.json"), "--public-report", str(out / "p.json"), "--html", str(out / "page.html"),
                     "--quiet"])
    assert code == 0
    return out


def test_report_and_page_begin_confidential(released):
    first = (released / "r.json").read_text(encoding="utf-8").splitlines()[0]
    assert first == '{"notice": "' + CONFIDENTIAL + '",'
    rep = json.loads((released / "r.json").read_text())
    assert rep["reveals"]["positions_protected"] is False and "(3 of 6)" in rep["reveals"]["statement"]
    page = (released / "page.html").read_text(encoding="utf-8")
    body = page.split("<main>", 1)[1]
    assert body.startswith(f'<p class="confidential" id="notice">{CONFIDENTIAL}</p>')
    # every warning at the top of the page, before the summary
    top = body.split('<section id="summary">')[0]
    assert rep["warnings"] and all(w.replace("'", "&#x27;") in top for w in rep["warnings"])
    assert 'id="reveals"' in top


def test_public_report_holds_no_private_position_and_says_what_audit_checks(released, run, capsys):
    text = (released / "p.json").read_text(encoding="utf-8")
    assert text.splitlines()[0].startswith('{"notice": "PUBLIC: holds no private position')
    pub = json.loads(text)
    assert pub["format"] == "redactopt.release.public-report/1"
    assert not set(pub) & {"sequences", "sequences_file", "blocks", "mechanism", "private", "input", "cover"}
    assert "per_private" not in pub["leakage"] and "sequence" not in pub["leakage"]
    assert not re.search(r"\bh0[1-6]\b", text)  # no sequence id anywhere
    conf = json.loads((released / "r.json").read_text())
    assert [d["mechanism"] for d in pub["designs"]] == [s["mechanism"] for s in conf["shapes"]]
    assert pub["eps"] == 1.0 and pub["chain"]["alpha"] == ALPHA and pub["utility"] == {
        k: conf["utility"][k] for k in ("expected", "realised", "redacted", "upper_bound", "gap")}
    code, out, _ = _cli(run, capsys, "audit", released / "p.json")
    assert code == 0 and "not checked: where the designs are placed" in out
    assert out.rstrip().endswith(f"result    : PASS ({len(pub['designs'])} of {len(pub['designs'])} designs pass)")
    # the designs are judged: against a smaller budget they fail
    code, out, _ = _cli(run, capsys, "audit", released / "p.json", "--eps", "0.5")
    assert code == 1 and out.rstrip().endswith(f"(0 of {len(pub['designs'])} designs pass)")


# --------------------------------------------------------------------------
# warnings a person sees
# --------------------------------------------------------------------------
def test_warnings_come_first_in_the_summary_and_under_warnings_in_json(homes, run, capsys, tmp_path):
    d, _ = homes
    argv = ["apply", d / "homes.csv", *BASE, *GIVEN, "--out", tmp_path / "o.csv", "--report", tmp_path / "r.json"]
    code, out, _ = _cli(run, capsys, *argv)
    rep = json.loads((tmp_path / "r.json").read_text())
    head, rest = out.split("\n\n", 1)
    assert code == 0 and head.startswith(f"WARNINGS  : {len(rep['warnings'])} (read them before the summary)")
    assert rest.startswith("wrote     :") and not re.search(r"(?m)^warning", rest)
    flat = " ".join(head.split())
    assert all(" ".join(w.split()) in flat for w in rep["warnings"])
    assert "positions : NOT covered" in rest and f"({CONFIDENTIAL})" in rest
    code, out, _ = _cli(run, capsys, *argv, "--force", "--format", "json")
    assert code == 0 and json.loads(out)["warnings"] == rep["warnings"]


def test_the_flag_check_runs_on_every_back_end(homes, run, capsys, tmp_path):
    d, _ = homes
    pytest.importorskip("dask")
    from redactopt.release.dask_backend import apply_dask

    with pytest.raises(ReleaseRefused, match="is the protected column"):
        apply_dask(d / "homes.csv", tmp_path / "ds", column="occupied", by="home", private_column="occupied",
                   eps=1.0, alpha=ALPHA, beta=BETA)
    assert not (tmp_path / "ds").exists()
    err = _refused_from_the_cli(run, capsys, tmp_path, d / "homes.csv", "--column", "occupied", "--by", "home",
                                "--private-column", "occupied", "--eps", "1", "--class", "scan")
    assert "--public-report applies to local releases" in err  # (its options are refused first, then the flag)
    code, _, err = _cli(run, capsys, "apply", d / "homes.csv", "--column", "occupied", "--by", "home",
                        "--private-column", "occupied", "--eps", "1", "--class", "scan", "--out", tmp_path / "c.csv")
    assert code == 2 and "is the protected column" in err and not (tmp_path / "c.csv").exists()


def test_a_covered_release_in_memory_and_a_covered_categorical_release_audit_clean(homes, run, capsys, tmp_path):
    d, df = homes
    released, rep = apply_frame(df, column="occupied", by="home", private_column="optout", eps=1.0, alpha=ALPHA,
                                beta=BETA, seed=2, cover=1, method="dim")
    assert rep["reveals"]["positions_protected"] is True and rep["cover"]["copies"][0]["per_sequence"] == 2
    # every home holds blocks now, with or without an opt-out: the private rows among them
    assert all(s["blocks"] for s in rep["sequences"])
    assert released["occupied"].isna().to_numpy()[df["optout"].to_numpy() == 1].all()
    level = df.assign(level=np.where(df["occupied"] == 1, "on", "off"))
    level.to_csv(tmp_path / "lv.csv", index=False)
    code, _, err = _cli(run, capsys, "apply", tmp_path / "lv.csv", "--column", "level", "--categorical", "--by", "home",
                        "--private-column", "optout", "--eps", "1", "--seed", "2", "--cover", "1", "--method", "dim",
                        "--out", tmp_path / "o.csv", "--report", tmp_path / "r.json", "--quiet")
    assert code == 0, err
    k = json.loads((tmp_path / "r.json").read_text())
    assert len(k["private"]) == 33 and k["leakage"]["decoy_records"] > 0
    code, out, _ = _cli(run, capsys, "audit", tmp_path / "r.json")
    assert code == 0 and "overall   : PASS" in out


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_one_sequence_with_a_given_chain_is_watched_and_covered_without_a_fitting_pass(tmp_path, fmt):
    """The release paths that need no fit (a CSV designed while scanned, a Parquet file never scanned) judge the
    time order and draw the same cover from the same seed."""
    from homes import chain_values

    df = pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=3000, freq="min"),
                       "x": chain_values(3000, np.random.default_rng(0))})
    write = {"csv": lambda d, p: d.to_csv(p, index=False), "parquet": lambda d, p: d.to_parquet(p)}[fmt]
    write(df, tmp_path / f"one.{fmt}")
    write(df.iloc[::-1].reset_index(drop=True), tmp_path / f"back.{fmt}")
    kw = dict(column="x", eps=1.0, alpha=ALPHA, beta=BETA)
    with pytest.raises(ReleaseRefused, match="column 'ts' goes back in time: row 2"):
        apply_table(tmp_path / f"back.{fmt}", tmp_path / f"o.{fmt}", private=[5], **kw)
    assert not (tmp_path / f"o.{fmt}").exists()
    rep = apply_table(tmp_path / f"one.{fmt}", tmp_path / f"c.{fmt}", private=list(range(1000, 1010)), seed=1, cover=2,
                      **kw)
    runs = rep["cover"]["decoy_runs"][0]["runs"]
    assert len(runs) == 2 and all(b - a == 9 for a, b in runs)
    # the decoys of seed 1, drawn here from the cover's stream: uniform starts of 10 records among 2991
    from redactopt.release.bits import SeededBits
    from redactopt.release.cover import uniform_integers
    from redactopt.release.data import sequence_key

    starts = uniform_integers(SeededBits(1), sequence_key(None), 3000 - 10 + 1, 2, tag=10)
    assert sorted(runs) == sorted([[int(s) + 1, int(s) + 10] for s in starts])


def test_the_varying_chains_of_the_model_check_refuse_only_when_clearly_better_and_leaking():
    from redactopt.release.alternatives import varying_alternatives
    from redactopt.release.refusals import refuse_broken_model

    rows = {"alternatives": [
        {"model": "date:hour", "p_value": 2.4e-05, "leakage": 1.03, "record": 7090, "sequence": None},
        {"model": "date:weekday", "p_value": 1e-9, "leakage": 1.0 + 1e-12, "record": 7090, "sequence": None}]}
    alts = varying_alternatives(rows, 1.0)
    assert [a.refuses for a in alts] == [False, False]  # p not below 1e-6; a leakage within the float band
    assert refuse_broken_model(alts, 1.0, accept=False) == []
    rows["alternatives"][1]["leakage"] = 1.2
    alts = varying_alternatives(rows, 1.0)
    with pytest.raises(ReleaseRefused, match="chain varying with date:weekday .* leak 1.2 > eps = 1 about record 7090"):
        refuse_broken_model(alts, 1.0, accept=False)
    (note,) = refuse_broken_model(alts, 1.0, accept=True)
    assert note.startswith("the homogeneity test of the transitions across its levels rejects")
