"""Benchmarks: our tensor CFR side by side with OpenSpiel's CFR solvers (C++, Python, JAX).

``openspiel_bench`` runs the comparison (each solver in its own worker subprocess,
timed round-robin), ``report`` renders the markdown table and the time-vs-size plot,
``_worker`` is the subprocess entry point.
"""
