"""Start-up cost of the CLI: wall time and peak RSS of ``tensorcfr --help`` and friends,
and which heavy libraries each command imports before doing anything.

Each command runs ``--repeat`` times in a fresh interpreter (``python -c`` calling the
entry point, so the numbers do not depend on the console-script wrapper); the table gives
the median wall time, the median peak RSS (the child's ``VmHWM``) and the heavy
modules found in ``sys.modules`` at exit.  ``--src DIR`` measures another checkout's
``src`` folder (e.g. an old commit exported with ``git archive``), for before/after
comparisons.

    nice -n 5 .venv/bin/python benchmarks/bench_startup.py --repeat 7
    nice -n 5 .venv/bin/python benchmarks/bench_startup.py --src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["--help"],
    ["solve", "--help"],
    ["pasur", "--help"],
    ["pasur", "solve", "--help"],
    ["bench", "--help"],
]
HEAVY = ("torch", "numpy", "pyspiel", "open_spiel", "matplotlib", "pyarrow", "xgboost", "ray",
         "sklearn", "fastapi", "uvicorn", "ot", "scipy", "pandas", "jax")

_CHILD = """
import sys
sys.argv = ["tensorcfr"] + {args!r}
from tensorcfr.cli.main import main
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
with open("/proc/self/status") as status:
    hwm = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\nHWM_KB=" + hwm + "\\n")
"""


def measure(args: list[str], repeat: int, src: str | None) -> dict[str, object]:
    """Median wall seconds and peak RSS MiB of ``tensorcfr ARGS`` over ``repeat`` runs."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    walls, rss, heavy = [], [], ""
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(args=args, heavy=HEAVY)],
                              capture_output=True, text=True, env=env, check=False)
        walls.append(time.perf_counter() - started)
        rss.append(next(int(line[7:]) / 1024 for line in proc.stderr.splitlines()
                        if line.startswith("HWM_KB=")))
        heavy = next((line[6:] for line in proc.stderr.splitlines()
                      if line.startswith("HEAVY=")), "?")
    return {"command": "tensorcfr " + " ".join(args), "median_s": statistics.median(walls),
            "min_s": min(walls), "peak_rss_mib": statistics.median(rss), "heavy_imports": heavy or "-"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--src", default=None, help="a src/ folder to measure instead")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    options = parser.parse_args()
    rows = [measure(args, options.repeat, options.src) for args in COMMANDS]
    info = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "load_1min": os.getloadavg()[0], "repeat": options.repeat,
            "src": options.src or "installed package", "rows": rows}
    if options.json:
        print(json.dumps(info))
        return 0
    print(f"python {info['python']}, {info['cpus']} CPUs, load {info['load_1min']:.2f}, "
          f"{options.repeat} runs each, {info['src']}")
    print("| command | median s | min s | peak RSS MiB | heavy modules imported |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        print(f"| `{row['command']}` | {row['median_s']:.2f} | {row['min_s']:.2f} | "
              f"{row['peak_rss_mib']:.0f} | {row['heavy_imports']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
