"""redactopt: design, prove and apply local redaction mechanisms for correlated data.

The Python API counts records from 0 (numpy); the CLI and files count from 1 (the paper).
"""

from redactopt.chain import MarkovChain
from redactopt.influence import (
    Regions,
    delta_star,
    max_influence,
    pointwise_influence,
    regions,
    set_max_influence,
)
from redactopt.leakage import (
    LeakageResult,
    leakage,
    leakage_bruteforce,
    max_leakage,
    utility,
    utility_monte_carlo,
)
from redactopt.mechanisms import (
    Mechanism,
    markov_quilt,
    theorem2_bound,
    three_region,
    three_region_utility,
)
from redactopt.certify import Certificate, DesignResult, lemma2_upper_bound

__version__ = "0.1.0"

__all__ = [
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
    "__version__",
]
