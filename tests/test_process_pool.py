"""utils.process_pool: jobs on local worker processes, results and failures handed over."""

from __future__ import annotations

import operator

from tensorcfr.utils.process_pool import run_on_processes


def test_results_and_a_failing_job_are_handed_over():
    results: dict[int, tuple] = {}
    jobs = ((i, (10, i)) for i in range(6))  # 10 // 0 fails, the others return
    info = run_on_processes(operator.floordiv, jobs,
                            lambda key, result, error: results.__setitem__(key, (result, error)),
                            workers=2)
    assert info == {"mode": "processes", "workers": 2}
    assert {k: r for k, (r, e) in results.items() if e is None} == {
        i: 10 // i for i in range(1, 6)}
    result, error = results[0]
    assert result is None and error.startswith("worker failed: ZeroDivisionError")
