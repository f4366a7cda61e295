"""Rate searches (bisect, MLR, loss fit, MRR, several goals at once) and the
registry that creates one by name."""
