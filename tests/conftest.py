"""Shared test fixtures."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Run a test module with one torch thread (restored afterwards)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


# ------------------------------------------------------------------ distribution (xdist)
# `make test` runs `pytest -n 2 --dist loadfile --no-loadscope-reorder`: each file runs whole on
# one worker (its module fixtures are built once) and a worker takes the next file when it is
# nearly done. Files are handed out in the order below: the known slow files first, slowest
# first (the longest-processing-time rule), so that no long file starts last while the other
# worker idles; every other file keeps its place after them. The seconds are one file's sum of
# test times from `--junitxml` (2026-11-28, load about 4, with the files changed since by
# docs/testing.md's latest section scaled to their new times): only their order matters, and a
# file missing here only runs later.
SLOW_FILE_SECONDS: dict[str, float] = {
    "test_pasur_tournament.py": 80,
    "test_reliability.py": 65,
    "test_reliability_ray.py": 57,  # mostly waiting for Ray: little CPU
    "test_play_browser.py": 54,
    "test_pasur_evaluate.py": 52,
    "test_pasur_batched.py": 51,
    "test_docs_examples.py": 51,
    "test_best_response.py": 51,
    "test_play_api.py": 51,
    "test_play_terminal.py": 50,
    "test_pasur_tensor_tree.py": 48,
    "test_numeral211_sampled.py": 44,
    "test_cli_pasur_dcfr.py": 41,
    "test_numeral211_solver.py": 40,
    "test_numeral211_abstract_cfr.py": 38,
    "test_cfr_parity.py": 38,
    "test_pasur_round_cfr.py": 37,
    "test_pasur_batch.py": 36,
    "test_pasur_exact.py": 35,
    "test_play_security.py": 34,
    "test_numeral211_soft_clustering.py": 33,
    "test_cli_faults.py": 32,
    "test_reliability_kinds.py": 31,
    "test_numeral211_embedding.py": 29,
    "test_pasur_tournament_price.py": 28,
    "test_play_memory.py": 25,
    "test_numeral211_cfr_br.py": 24,
    "test_core_boundary.py": 24,
    "test_cli_pasur_basic.py": 22,
    "test_play_hardening.py": 20,
    "test_output_paths.py": 19,
    "test_pasur_policy_model.py": 18,
    "test_pasur_tournament_merge.py": 15,
    "test_core_numba.py": 16,
    "test_numeral211_cli.py": 16,
    "test_pasur_ismcts.py": 15,
    "test_readers_fuzz.py": 14,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the tests of the known slow files first, slowest file first (stable otherwise)."""
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (-SLOW_FILE_SECONDS.get(item.path.name, 0.0), order[id(item)]))
