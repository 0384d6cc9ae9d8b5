"""The old path of the k-state rational evaluator: :mod:`redactopt.judge.exact` serves every chain (issue 25)."""

from redactopt.judge.exact import ExactCertificate as KExactCertificate
from redactopt.judge.exact import ExactResult as KExactResult
from redactopt.judge.exact import certify_exact as certify_kexact
from redactopt.judge.exact import exact_leakage as exact_kleakage
from redactopt.judge.exact import exact_leakage_bruteforce as exact_kleakage_bruteforce
from redactopt.judge.exact import exact_n_step as exact_kn_step

__all__ = ["KExactResult", "KExactCertificate", "exact_kleakage", "certify_kexact", "exact_kleakage_bruteforce",
           "exact_kn_step"]
