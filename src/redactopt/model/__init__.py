"""The model: the binary Markov chain and the influence of the private record on the others."""
