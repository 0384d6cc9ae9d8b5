"""Extending a ledgered series: new rows appended to sequences already released (issue 39, item 3).

``apply NEW_ROWS.csv --ledger FILE --extend`` (docs/releases.md, "Extending a series").  ``NEW_ROWS``
holds only the rows appended to each sequence of the ledger (by ``--by``; a sequence the ledger does not
know starts afresh); the release publishes those rows and nothing else.  What every release together
shows is then one local mechanism on the extended sequence: the earlier releases' composition ``Q`` on
the old rows (docs/mathematics.md §14) and the new factor ``r`` on the new rows (the earlier releases did
not show them: redacted with certainty).  ``r`` is designed so that every private record, old and new,
stays within the ledger's total budget, and the new private records within ``--eps`` alone:

* **Only the open tail matters.**  Let ``c`` be the last old row ``Q`` publishes with certainty.  Given
  ``X_c`` the rows before it are independent of everything after (the Markov property; the cut argument
  of §8), so a private record before ``c`` keeps its leakage whatever is appended, and every other
  private record — the *open* old ones after ``c`` and the new ones — is judged exactly on the window
  from ``c`` to the end.  The window is the old tail (at most the earlier designs' blocks) and the new
  rows: the old series itself is never read.
* **Candidates.**  ``r = max(F_e, wipe_w)``: ``F_e`` the fresh design of the new rows at ``e`` (``--eps``
  and fractions of it, as planned by ``apply`` for the new rows alone; 0 without new private records),
  ``wipe_w`` redacting the first ``w`` new rows with certainty — which moves what is published away from
  the open tail (``w`` = all new rows is the all-⊥ extension: the old records then leak exactly what they
  leaked, §8).  For each ``e`` the least passing ``w`` is searched (doubling, then bisection); every
  candidate is judged by the composed audit on the window (every earlier factor, each chain of the
  ledger, rounding allowed for) against the total, and alone (new rows only) against ``--eps``.  The
  passing candidate with the most expected published new records wins.
* **The optimum, certified.**  The release alone is ``--eps``-private about the new private records, so
  its expected utility is at most the certified bound of a fresh release of the new rows (the fresh
  plan's region certificates; the number of new rows where nothing new is private); the report states
  the bound and the gap.
* **Refused** in one line (nothing written) when no candidate passes — the new rows can then not be
  published without exceeding the budget of a private record, not even with every one redacted (a new
  private record whose neighbour was published, or a budget already spent).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from redactopt.errors import ReleaseRefused
from redactopt.judge.audit import as_sparse, audit_segments
from redactopt.judge.certify import SparseRows
from redactopt.judge.compose import ComposedAudit, compose_audit, product_rows
from redactopt.model.chain import MarkovChain
from redactopt.release.ledger_file import Ledger, LedgerEntry, LedgerError, LedgerSequence, json_id, now
from redactopt.release.plan import SequencePlan, plan_release, within_time_limit

__all__ = ["ExtensionChoice", "open_tail", "design_extension", "extend_table", "EXTENSION_FORMAT_NOTE"]

#: Bisection steps for the redaction probability of the last wiped row (each step one exact judgement).
PARTIAL_STEPS = 12

#: The shortest prefix of new rows the window bound is computed on.
PREFIX_MIN = 256

#: Candidates are screened in floating point this far (relatively) below the budgets; the one kept is proven.
SCREEN = 1e-9

EXTENSION_FORMAT_NOTE = ("an extension: the sequences' rows are the appended rows only (row 1 = the first new "
                         "row); 'first' is that row's number in the extended sequence")


@dataclass
class ExtensionChoice:
    """The design of one sequence's new rows (0-based, relative to the first new row): the factor ``r``, the
    wipe ``w``, the fresh design's ``e``, the composed ``audit`` on the window from ``lo`` (a row of the
    extended sequence) with ``window_private`` (0-based in the extended sequence), the release's own leakage
    per new private record (``alone``, relative positions), its expected redacted records ``mass`` and the
    certified bound on its expected published records."""

    factor: SparseRows
    wipe: int
    eps: float | None
    audit: ComposedAudit
    lo: int
    window_private: tuple[int, ...]
    alone: dict[int, float]
    mass: float
    published_bound: float

    def cumulative(self) -> dict[int, float]:
        """Cumulative leakage per private record of the window, 0-based in the extended sequence."""
        return {p + self.lo: v for p, v in self.audit.cumulative.items()}


def open_tail(Q: SparseRows, private: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """``(c, open)``: the last row of the old rows the composition ``Q`` publishes with certainty (``-1`` if
    none) and the old private records after it (their leakage can change when rows are appended)."""
    n = Q.n
    if Q.blocks and Q.starts[-1] + Q.blocks[-1].shape[0] == n:
        c = Q.starts[-1] - 1
    else:
        c = n - 1
    return c, tuple(p for p in private if p > c)


def _window_factor(f: SparseRows, lo: int, hi: int) -> SparseRows:
    """Rows ``lo..hi-1`` of a factor as a table of their own (blocks clipped; never densified)."""
    starts, blocks = [], []
    for s, b in zip(f.starts, f.blocks):
        a, e = max(s, lo), min(s + b.shape[0], hi)
        if a < e:
            starts.append(a - lo)
            blocks.append(np.asarray(b[a - s:e - s], dtype=float))
    return SparseRows(hi - lo, tuple(starts), tuple(blocks))


def design_extension(earlier: list[tuple[MarkovChain, SparseRows]], n_old: int, old_private: tuple[int, ...],
                     chain: MarkovChain, new_private: tuple[int, ...], fresh: list[tuple[float, SparseRows]], m: int,
                     *, eps: float, total_eps: float, published_bound: float | None = None) -> ExtensionChoice | None:
    """The best verified factor of ``m`` new rows appended to ``n_old`` old ones (module docstring), or
    ``None`` if no candidate passes.

    ``earlier``: every earlier release's factor of the *extended* sequence (``n_old + m`` rows; 1 on rows it
    did not show) with its chain; ``old_private``: the earlier private records (0-based); ``new_private``:
    the new rows' private records (0-based relative to the first new row); ``fresh``: ``(e, F_e)`` fresh
    designs of the new rows (``m`` rows), the first at ``eps``.
    """
    N = n_old + m
    if n_old:
        Q = product_rows([_window_factor(f, 0, n_old) for _, f in earlier]) if earlier else SparseRows(n_old, (), ())
        c, open_old = open_tail(Q, old_private)
    else:
        c, open_old = -1, ()
    lo = max(c, 0)
    window_private = tuple(sorted(set(open_old) | {n_old + p for p in new_private}))
    priv_w = tuple(p - lo for p in window_private)
    earlier_w = [(ch, _window_factor(f, lo, N)) for ch, f in earlier]
    head = np.ones((n_old - lo, 2))
    pi = chain.stationary
    fresh = fresh or [(None, SparseRows(m, (), ()))]
    if published_bound is None:
        published_bound = float(m)
    tail_rows = n_old - lo
    sentinel = tuple(sorted(sorted(priv_w, key=lambda p: abs(p - tail_rows))[:2]))
    passing: list[ExtensionChoice] = []
    seen: dict[bytes, ExtensionChoice | None] = {}

    def judge(F: np.ndarray, e: float | None, w: int, level: float = 1.0, value: int = 0) -> ExtensionChoice | None:
        """A candidate screened in floating point (a margin below the budgets); :func:`proven` decides."""
        r = F.copy()
        r[:w] = 1.0
        if level < 1.0:  # the last wiped row publishes `value` with probability 1 - level, never the other one
            r[w - 1, value] = max(float(F[w - 1, value]), level)
        key = r.tobytes()
        if key in seen:
            return seen[key]
        seen[key] = None
        rs = as_sparse(r)
        alone: dict[int, float] = {}
        ext = as_sparse(np.vstack([head, r]))
        if sentinel and len(sentinel) < len(priv_w):  # the records nearest the boundary first: most candidates
            sa = compose_audit(earlier_w + [(chain, ext)], sentinel, alone=False)  # that fail, fail there
            if max(sa.cumulative.values()) > total_eps * (1 - SCREEN):
                return None
        if new_private:
            sa = audit_segments(chain, rs, new_private, None)
            alone = {p: res.leakage for p, (res, _) in sa.per.items()}
            if max(alone.values()) > eps * (1 - SCREEN):
                return None
        ca = compose_audit(earlier_w + [(chain, ext)], priv_w, alone=False)
        if max(ca.cumulative.values()) + max(ca.allowance.values(), default=0.0) > total_eps * (1 - SCREEN):
            return None
        ch = ExtensionChoice(rs, w, e, ca, lo, window_private, alone, float((r @ pi).sum()), published_bound)
        seen[key] = ch
        return ch

    def proven(ch: ExtensionChoice) -> bool:
        """The exact verdicts (rational arithmetic near the budgets, the rounding allowance subtracted)."""
        if new_private and not audit_segments(chain, ch.factor, new_private, eps).passed:
            return False
        ext = as_sparse(np.vstack([head, np.asarray(ch.factor.rows(0, m))]))
        return bool(compose_audit(earlier_w + [(chain, ext)], priv_w, eps=total_eps, alone=False).passed)

    if not priv_w:  # nothing old is open and nothing new is private: the new rows are published as they are
        return None

    steps = [0] + [1 << i for i in range(max(1, m.bit_length()))] + [m]
    for e, F in fresh:
        Fd = np.asarray(F.rows(0, m), dtype=float)
        ok, bad = None, -1
        for w in sorted({min(s, m) for s in steps}):
            ch = judge(Fd, e, w)
            if ch is not None:
                ok = ch
                break
            bad = w
        if ok is None:
            continue
        a, b = bad, ok.wipe  # a fails (or -1), b passes: the least passing w between them
        while b - a > 1:
            mid = (a + b) // 2
            ch = judge(Fd, e, mid)
            if ch is not None:
                b, ok = mid, ch
            else:
                a = mid
        if ok.wipe > 0:  # the last wiped row partly: one value published with the most probability that passes
            w_ok, best_part = ok.wipe, ok
            for value in (0, 1):
                lo_s, hi_s = 0.0, 1.0
                for _ in range(PARTIAL_STEPS):
                    mid = 0.5 * (lo_s + hi_s)
                    ch = judge(Fd, e, w_ok, mid, value)
                    if ch is not None:
                        hi_s = mid
                        best_part = ch if ch.mass < best_part.mass else best_part
                    else:
                        lo_s = mid
            ok = best_part
        passing.append(ok)
    for ch in sorted(passing, key=lambda c: c.mass):  # the best candidate whose verdicts are proven
        if proven(ch):
            break
    else:
        return None
    # a second certified bound, on a prefix of K new rows: the optimum of the window's first rows at the total
    # budget (the private records there; the old tail free too) less what the fixed old tail publishes, plus
    # the K..m-1 rows counted whole (restricting a mechanism to a prefix is a post-processing: it is feasible)
    tail = n_old - lo
    K = min(m, max(PREFIX_MIN, 4 * (ch.wipe + 1)))
    pref_priv = tuple(p for p in priv_w if p < tail + K)
    if pref_priv:
        pref = [(c_, _window_factor(f, 0, tail + K)) for c_, f in earlier_w]
        ch.published_bound = min(ch.published_bound, window_bound(chain, pref, tail, K, pref_priv, total_eps) + (m - K))
    return ch


def window_bound(chain: MarkovChain, earlier_w: list[tuple[MarkovChain, SparseRows]], tail: int, m: int,
                 private: tuple[int, ...], total_eps: float, time_limit: float = 2.0) -> float:
    """A certified upper bound on the expected published new records of any extension whose composition keeps
    every private record of the window within ``total_eps`` (``inf`` when none is proven): the certified
    optimum of the window's ``tail + m`` records at ``total_eps`` for the private record nearest the first new
    row alone (a relaxation: every feasible mechanism is feasible for it; the frontier design's certificate,
    scope ``all``) less the expected records the fixed old tail publishes (the tail's rows of the window under
    the chain's stationary law).  The frontier gets ``time_limit`` seconds; stopped, its certificate is Lemma
    2's (valid, weaker)."""
    from redactopt.engine.design import design

    # fewer private records bound more (a relaxation): the one nearest the first new row keeps it cheap, and
    # the side-frontier optimum certifies it (solvers/frontier.py)
    near = min(private, key=lambda p: abs(p - tail))
    try:
        res = design(chain, tail + m, eps=total_eps, p=near, method="frontier", time_limit=time_limit)
    except (ValueError, RuntimeError):
        return math.inf
    cert = res.certificate
    if cert is None or cert.scope != "all" or not math.isfinite(cert.upper_bound):
        return math.inf
    Qt = np.asarray(product_rows([f for _, f in earlier_w]).rows(0, tail), dtype=float) if earlier_w and tail \
        else np.zeros((tail, 2))
    tail_published = tail - float((Qt @ chain.stationary).sum())
    # outward: the bound rounded up, what the tail publishes rounded down
    return math.nextafter(cert.upper_bound * (tail + m) * (1 + 1e-12) - tail_published * (1 - 1e-12), math.inf)


@within_time_limit
def extend_table(source: Any, dest: Any, *, column: str, eps: float, ledger: Any, private: list[int] | None = None,
                 private_column: str | None = None, by: str | None = None, alpha: float | None = None,
                 beta: float | None = None, method: str = "auto", seed: int | None = None, report: Any = None,
                 force: bool = False, chunk_rows: int | None = None, time_limit: float = 60.0,
                 workers: int | None = None, keep: Any = None, order_by: str | None = None) -> dict[str, Any]:
    """Release the rows appended to a ledgered series (module docstring); returns the report
    (``redactopt.release.apply-report/3``, its sequences the new rows, with a ``ledger`` section).

    ``ledger`` is a :class:`~redactopt.release.ledger_release.LedgeredRelease` of a ledger with at least one
    release; the chain is ``alpha``/``beta`` or the ledger's latest.  ``private`` (0-based, one sequence)
    and ``private_column`` flag private records among the new rows.
    """
    from redactopt.io import stdin_as_file
    from redactopt.release.passes import (Span, check_release_paths, ordered_scan, plan_output, scan, splices,
                                         write_csv, write_redacted)
    from redactopt.release.bits import bit_source
    from redactopt.release.ledger_release import LedgerRedactor, FactorRows
    from redactopt.release.refusals import refuse_flag_protected
    from redactopt.release.report import write_report
    from redactopt.release.tables import DEFAULT_CHUNK_ROWS, TableReader, TableWriter

    led: Ledger = ledger.ledger
    if led.empty:
        raise LedgerError(f"{led.path}: --extend continues a ledgered series, but the ledger has no release yet")
    if ledger.consistent:
        raise LedgerError("--extend publishes only the new rows: --consistent (publish the earlier values again) "
                          "does not apply")
    alpha, beta = ledger.chain(alpha, beta)
    chain = MarkovChain(float(alpha), float(beta))
    refuse_flag_protected([column], private_column)
    if private is not None and private_column is None and by is not None:
        raise ValueError("--private positions need a single sequence; with --by use --private-column")
    _, dst, rep_path = check_release_paths(source, dest, report, private=private if private is not None else
                                           ([] if private_column is None else None), private_column=private_column,
                                           by=by, force=force, report_sequences="inline")
    t0 = time.perf_counter()
    with stdin_as_file(source) as path:
        reader = TableReader(path, chunk_rows=chunk_rows or DEFAULT_CHUNK_ROWS)
        reader.require(column, by, private_column, order_by)
        plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column, keep=keep, rows=0)
        ordered = None
        if order_by is not None:
            state, ordered = ordered_scan(reader, column=column, by=by, private_column=private_column,
                                          order_by=order_by)
            binary = tuple(c for c in (column, private_column) if c) if reader.format == "csv" else ()
        else:
            state, binary = scan(reader, column=column, by=by, private_column=private_column)
        if state.rows == 0:
            raise ValueError(f"{reader.label}: the input has no data rows")
        if column != led.column or by != led.by:
            raise LedgerError(f"{led.path}: the ledger's releases protect column {led.column!r} by {led.by!r}, not "
                              f"{column!r} by {by!r}")
        new_private = bool(private) or state.private_codes.size > 0
        design = dict(eps=eps, alpha=chain.alpha, beta=chain.beta, method=method, time_limit=time_limit,
                      workers=workers)
        plan = plan_release(state, private=private or None, **design) if new_private else None
        ext = _Extension(ledger, state, plan, chain, eps)
        ext.design(lambda e: plan_release(state, private=private or None, **dict(design, eps=e)))
        bits = bit_source(seed)
        seqs = [SequencePlan(state.ids[c], int(state.n[c]), ext.private_of(c),
                             FactorRows(ext.choices[c].factor) if c in ext.choices else None)
                for c in range(len(state.ids))]
        redactor = LedgerRedactor(seqs, bits)
        output, dropped = plan_output(reader, column=column, by=by, order_by=order_by, private_column=private_column,
                                      keep=keep, rows=state.rows, rank=None if ordered is None else ordered.rank)
        with TableWriter(dest, force=force) as writer:
            write = write_csv if splices(reader, writer, output) else write_redacted
            redacted = write(reader, writer, redactor, state.index(), Span.whole(state), column=column, by=by,
                             binary=binary, output=output)
            rep = ext.report(redactor, redacted, bits=bits, seed=seed, method=method,
                             extra={"input": str(source), "output": str(dst), "column": column, "by": by,
                                    "private_column": private_column, "order_by": order_by},
                             report=None if rep_path is None else str(rep_path), dropped=dropped,
                             written=output.columns)
            rep["apply_seconds"] = time.perf_counter() - t0
            if rep_path is not None:
                rep = write_report(report, rep, force=force)
            ext.commit()
            writer.commit()
    return rep


class _Extension:
    """The bookkeeping of one extension: per sequence code, the old length, the design and the ledger entry."""

    def __init__(self, ledger: Any, state: Any, plan: Any, chain: MarkovChain, eps: float) -> None:
        self.lr, self.led, self.state, self.plan, self.chain, self.eps = ledger, ledger.ledger, state, plan, chain, eps
        self.ids = [json_id(v) for v in state.ids]
        self.m = [int(v) for v in state.n.tolist()]
        self.n_old = [self.led.length(sid) for sid in self.ids]
        self.choices: dict[int, ExtensionChoice] = {}
        designed = set(plan.designed().tolist()) if plan is not None else set()
        self.new_private = {c: plan.private_of(c) for c in designed}
        self.entry: LedgerEntry | None = None

    def private_of(self, c: int) -> tuple[int, ...]:
        return self.new_private.get(c, ())

    def design(self, replan: Callable[[float], Any]) -> None:
        from redactopt.release.ledger_release import EPS_FRACTIONS

        fresh_plans: list[tuple[float, Any]] = [] if self.plan is None else [(self.eps, self.plan)]
        for c, sid in enumerate(self.ids):
            n_old, m = self.n_old[c], self.m[c]
            old_priv = self.led.private_of(sid) if n_old else ()
            earlier = self.led.factors(sid, n_old + m) if n_old else []
            newp = self.private_of(c)
            bound = float(self.plan.upper_bound[c]) if self.plan is not None and newp else float(m)

            def fresh_of(plans: list) -> list[tuple[float, SparseRows]]:
                return [(e, p.sparse_rows(c)) for e, p in plans] if newp else []

            ch = design_extension(earlier, n_old, old_priv, self.chain, newp, fresh_of(fresh_plans), m,
                                  eps=self.eps, total_eps=self.lr.total_eps, published_bound=bound)
            if ch is None and not self._needs_design(c, earlier, old_priv, newp):
                continue  # nothing open, nothing new private: the new rows are published as they are
            if newp and ch is None:  # nothing passes with the fresh design at eps: fresh designs at less
                if len(fresh_plans) == 1:
                    fresh_plans += [(self.eps * f, replan(self.eps * f)) for f in EPS_FRACTIONS]
                ch2 = design_extension(earlier, n_old, old_priv, self.chain, newp, fresh_of(fresh_plans), m,
                                       eps=self.eps, total_eps=self.lr.total_eps, published_bound=bound)
                if ch2 is not None and (ch is None or ch2.mass < ch.mass):
                    ch = ch2
            if ch is None:
                where = "" if sid is None else f" of sequence {sid!r}"
                raise ReleaseRefused(f"the budget is spent: no design of the {m} new rows{where} keeps every private "
                                     f"record within --total-eps {self.lr.total_eps:g} and the new private records "
                                     f"within --eps {self.eps:g}, not even with every new row redacted; nothing "
                                     "written")
            self.choices[c] = ch

    def _needs_design(self, c: int, earlier: list, old_priv: tuple[int, ...], newp: tuple[int, ...]) -> bool:
        n_old = self.n_old[c]
        if newp:
            return True
        if not n_old or not old_priv:
            return False
        Q = product_rows([_window_factor(f, 0, n_old) for _, f in earlier])
        return bool(open_tail(Q, old_priv)[1])

    def report(self, redactor: Any, redacted: np.ndarray, *, bits: Any, seed: int | None, method: str,
               extra: dict[str, Any], report: str | None, dropped: list[str], written: Any) -> dict[str, Any]:
        """The extension's report (``apply-report/3``: the new rows' sequences with their mechanisms) and the
        ledger's new entry."""
        from redactopt.io import REPORT_FORMAT, mechanism_to_dict
        from redactopt.release.report import NOT_FOR_RELEASE
        from redactopt.release.reveals import CONFIDENTIAL

        led, chain = self.led, self.chain
        red = redactor.redacted_positions()
        total = int(sum(self.m))
        rows, seqs, per_all = [], [], []
        mass_total = bound_total = 0.0
        alone_w, cum_w = 0.0, -math.inf
        pi = chain.stationary
        for c, sid in enumerate(self.ids):
            m, n_old = self.m[c], self.n_old[c]
            ch = self.choices.get(c)
            newp = self.private_of(c)
            mass = ch.mass if ch is not None else 0.0
            bound = ch.published_bound if ch is not None else float(m)
            mass_total += mass
            bound_total += bound
            row: dict[str, Any] = {"id": sid, "n": m, "first": n_old + 1, "private": [p + 1 for p in newp],
                                   "redacted": int(redacted[c]), "realised_utility": 1.0 - int(redacted[c]) / m,
                                   "expected_utility": 1.0 - mass / m, "groups": [], "regions": []}
            if ch is None:
                row.update(leakage=[], leakage_max=None, blocks=[], upper_bound=None, gap=None, mechanism=None)
                rows.append(row)
                continue
            cum = ch.cumulative()
            leak = max(ch.alone.values(), default=0.0)
            alone_w = max(alone_w, leak)
            cum_w = max(cum_w, max(cum.values()))
            blocks = [[s + 1, s + b.shape[0]] for s, b in zip(ch.factor.starts, ch.factor.blocks)]
            row.update(leakage=[{"private": p + 1, "leakage": ch.alone[p]} for p in newp],
                       leakage_max=leak if newp else None, blocks=blocks, upper_bound=bound / m,
                       gap=max(0.0, (bound - (m - mass)) / m), wiped=ch.wipe,
                       open_earlier=[p + 1 for p in ch.window_private if p < n_old],
                       cumulative=[{"private": p + 1, "cumulative": v} for p, v in sorted(cum.items())],
                       design_info={"ledger": "extension", "fresh_eps": ch.eps, "wipe": ch.wipe})
            row["mechanism"] = (mechanism_to_dict(chain, ch.factor, private=newp, eps=self.eps,
                                                  method="ledger:extension", utility=1.0 - mass / m, leakage=leak)
                                if newp else None)
            per_all += [{"sequence": sid, "private": p + 1, "leakage": ch.alone[p]} for p in newp]
            rows.append(row)
            # the ledger's entry: the factor in the extended sequence's rows
            shifted = SparseRows(n_old + m, tuple(s + n_old for s in ch.factor.starts), ch.factor.blocks)
            pos = red.get(c, np.zeros(0, dtype=np.int64)) + n_old
            seqs.append(LedgerSequence(sid, n_old + m, tuple(n_old + p for p in newp), shifted, pos,
                                       [ch.alone[p] for p in newp], [cum[n_old + p] for p in newp], n_old,
                                       [(p, cum[p]) for p in ch.window_private if p < n_old]))
        prev = led.releases[-1].cumulative
        cumulative = max(prev, cum_w)
        number = len(led.releases) + 1
        ub, expected = bound_total / total, 1.0 - mass_total / total
        self.entry = LedgerEntry(number, False, self.eps, self.lr.total_eps, chain, method,
                                 "seeded" if seed is not None else "secure", now(), report, extra.get("output"),
                                 alone_w, cumulative, expected, ub, seqs,
                                 {sid: (self.n_old[c], self.n_old[c] + self.m[c]) for c, sid in enumerate(self.ids)},
                                 True)
        red_total = int(np.asarray(redacted).sum())
        rep: dict[str, Any] = {"notice": CONFIDENTIAL, "format": REPORT_FORMAT, **extra, "rows": total,
                               "eps": self.eps, "method": f"{method} (ledger extension)",
                               "chain": {"alpha": chain.alpha, "beta": chain.beta, "source": "given"},
                               "seed": seed, "randomness": {"source": bits.description, "secure": bool(bits.secure)},
                               "utility": {"expected": expected, "realised": 1.0 - red_total / total,
                                           "redacted": red_total, "upper_bound": ub, "gap": max(0.0, ub - expected)},
                               "designs": {"ledger": "each sequence's new rows are designed against the ledger"},
                               "shapes": [], "sequences_count": len(self.ids),
                               "designed_sequences": sum(1 for r in rows if r["mechanism"] is not None),
                               "leakage": {"max": alone_w, "private_records": len(per_all), "per_private": per_all},
                               "columns": {"protected": [column_of(extra)], "written": written or "all",
                                           "dropped": dropped, "not_covered": []},
                               "extension": EXTENSION_FORMAT_NOTE, "sequences": rows}
        if seed is not None:
            rep["label"] = NOT_FOR_RELEASE
        history = [e.summary() for e in led.releases] + [self.entry.summary()]
        rep["ledger"] = {"file": led.path, "id": led.id, "release": number, "releases": history, "consistent": False,
                         "extends": True, "total_eps": self.lr.total_eps, "factors": [number],
                         "leakage_alone": alone_w, "cumulative": cumulative,
                         "per_private": [{"sequence": s.id, "private": p + 1, "alone": a, "cumulative": cu}
                                         for s in seqs for p, a, cu in zip(s.private, s.alone, s.cumulative)]
                         + [{"sequence": s.id, "private": p + 1, "alone": None, "cumulative": cu}
                            for s in seqs for p, cu in s.also],
                         "utility": {"expected": expected, "upper_bound": ub, "gap": max(0.0, ub - expected),
                                     "bound_is": "the certified bound of a fresh release of the new rows at eps = "
                                                 f"{self.eps:g} (its own leakage never exceeds it)"},
                         "note": "cumulative: the exact leakage of every ledgered release together, judged on the "
                                 "window from the last old row published with certainty (earlier private records "
                                 "before it are unchanged); this release shows the appended rows only"}
        return rep

    def commit(self) -> None:
        assert self.entry is not None
        led = self.led
        lengths = dict(led.lengths)
        for c, sid in enumerate(self.ids):
            lengths[sid] = self.n_old[c] + self.m[c]
        led.lengths = list(lengths.items())
        led.rows = sum(n for _, n in led.lengths)
        led.releases.append(self.entry)
        led.write()


def column_of(extra: dict[str, Any]) -> Any:
    return extra.get("column")
