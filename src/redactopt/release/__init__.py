"""The release path: read tables, fit the chain, design, draw exact Bernoulli redactions, write."""
