"""The paper's mechanisms as printed: Three-Region (3R), Markov Quilt (MQ), Theorem 2."""
