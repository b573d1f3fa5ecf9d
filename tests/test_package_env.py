"""What ``import tensorcfr`` does to the process: PyTorch's huge-page switch for large CPU
tensors (docs/benchmarks/numeral211_speed.md: page faults were a quarter of a full-game
Numeral211 iteration without it)."""

from __future__ import annotations

import os
import subprocess
import sys


def test_import_turns_huge_pages_on_unless_the_caller_chose() -> None:
    """``import tensorcfr`` sets PyTorch's THP_MEM_ALLOC_ENABLE to 1 when it is unset (the
    allocator reads it at the first allocation) and keeps a value the caller set."""
    code = "import os, tensorcfr; print(os.environ['THP_MEM_ALLOC_ENABLE'])"
    for given, expected in ((None, "1"), ("0", "0"), ("1", "1")):
        env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
        if given is not None:
            env["THP_MEM_ALLOC_ENABLE"] = given
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        assert out == expected
