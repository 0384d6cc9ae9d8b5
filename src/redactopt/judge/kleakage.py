"""The old path of the k-state leakage: :mod:`redactopt.judge.leakage` serves every chain (issue 25)."""

from redactopt._validate import check_redact_prob
from redactopt.judge.kernelk import TINY, SidePairs, side_output, side_pairs, side_pairs_logspace
from redactopt.judge.leakage import LeakageResult as KLeakageResult
from redactopt.judge.leakage import MAX_BRUTEFORCE_OUTPUTS, check_mechanism
from redactopt.judge.leakage import leakage as kleakage
from redactopt.judge.leakage import leakage_bruteforce as kleakage_bruteforce
from redactopt.judge.leakage import leakage_segment as kleakage_segment
from redactopt.judge.leakage import log_likelihood_ratio as klog_likelihood_ratio
from redactopt.judge.leakage import max_leakage as kmax_leakage
from redactopt.judge.leakage import utility as kutility
from redactopt.judge.segments import segment
from redactopt.model.chain import check_chain

__all__ = ["KLeakageResult", "SidePairs", "TINY", "check_kmechanism", "check_kredact_prob", "side_pairs",
           "side_pairs_logspace", "kleakage", "kmax_leakage", "kleakage_bruteforce", "klog_likelihood_ratio",
           "kutility", "side_output", "segment", "kleakage_segment", "MAX_BRUTEFORCE_OUTPUTS"]


def check_kredact_prob(value, k, name="redact_prob"):
    """An ``(n, k)`` mechanism (:func:`redactopt._validate.check_redact_prob` with ``k`` columns; the old signature)."""
    return check_redact_prob(value, name, k=k)


def check_kmechanism(chain, redact_prob, private, name="private"):
    """:func:`~redactopt.judge.leakage.check_mechanism` for ``chain``'s states (the old signature)."""
    return check_mechanism(redact_prob, private, name, k=check_chain(chain).k)
