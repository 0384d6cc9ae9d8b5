"""redactopt: design, prove and apply redaction mechanisms for correlated data (any number of states).

The Python API counts records from 0 (numpy); the CLI and files count from 1 (the paper).

Layers, each importing only from the ones before it:

* ``redactopt.model`` — the chain and the influence of the private record (paper, Sec. II);
* ``redactopt.judge`` — exact leakage, rational certificates, attacks, verification;
* ``redactopt.paper`` — the paper's mechanisms as printed (3R, MQ, Theorem 2);
* ``redactopt.solvers`` — optimisers that *propose* candidates (no judging);
* ``redactopt.engine`` — ``design`` (the one place that judges), tuning, joint designs;
* ``redactopt.release`` — reading, fitting, drawing and writing real data;
* ``redactopt.interface`` — the command line, reports and the paper benchmarks.
"""

from redactopt.model.chain import Chain, MarkovChain
from redactopt.model.influence import (
    Regions,
    delta_star,
    max_influence,
    pointwise_influence,
    regions,
    set_max_influence,
)
from redactopt.judge.leakage import (
    LeakageResult,
    leakage,
    leakage_bruteforce,
    max_leakage,
    utility,
    utility_monte_carlo,
)
from redactopt.paper.mechanisms import (
    Mechanism,
    markov_quilt,
    theorem2_bound,
    three_region,
    three_region_utility,
)
from redactopt.judge.certify import Certificate, DesignResult
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.judge.audit import audit
from redactopt.engine.design import design, design_sparse
from redactopt.engine.joint import design_joint, design_joint_sparse
from redactopt.engine.tuning import frontier_split, tuned_three_region
from redactopt.release.fit import fit, fit_chain
from redactopt.io import design_to_dict, mechanism_to_dict, read_mechanism, read_mechanisms
from redactopt import datasets
from redactopt.version import __version__


__all__ = [
    "Chain",
    "MarkovChain",
    "Regions",
    "delta_star",
    "max_influence",
    "pointwise_influence",
    "regions",
    "set_max_influence",
    "LeakageResult",
    "leakage",
    "leakage_bruteforce",
    "max_leakage",
    "utility",
    "utility_monte_carlo",
    "Mechanism",
    "markov_quilt",
    "theorem2_bound",
    "three_region",
    "three_region_utility",
    "Certificate",
    "DesignResult",
    "lemma2_upper_bound",
    "design",
    "design_joint",
    "design_joint_sparse",
    "design_sparse",
    "frontier_split",
    "tuned_three_region",
    "fit",
    "fit_chain",
    "design_to_dict",
    "mechanism_to_dict",
    "read_mechanism",
    "read_mechanisms",
    "audit",
    "apply_table",
    "apply_frame",
    "datasets",
    "__version__",
]


#: Names imported on first use (:func:`__getattr__`), listed by :func:`__dir__` all the same.
_LAZY = ("apply_table", "apply_frame")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name: str):
    # apply_table and apply_frame pull in pandas and pyarrow: import them on first use only
    if name == "apply_table":
        from redactopt.release.apply import apply_table

        return apply_table
    if name == "apply_frame":
        from redactopt.release.frame import apply_frame

        return apply_frame
    raise AttributeError(f"module 'redactopt' has no attribute {name!r}")
