"""Game-independent information abstraction: clustering (1-D k-means, equal-width bins,
k-means++ with weighted L1 / 1-D earth mover's distances), bucket-map files, and CFR over a
public tree whose hands are grouped into buckets or embedded (Embedding CFR).

Modules: :mod:`.clustering`, :mod:`.bucket_map`, :mod:`.abstract_cfr`.  Nothing here knows
cards; game packages (e.g. :mod:`tensorcfr.games.numeral211.abstraction.abstractions`)
compute features.
"""
