"""Design: ``design()`` judges the candidates the solvers propose; tuning, joint designs, comparisons."""
