"""Collects the run files of issue 28 part 4 into one work folder for
``bench_numeral211_figure5.py --report-only``: the distilled-Phi runs (``runs/n211_full_28``:
the paper's uniform average; ``runs/n211_full_28_reach``: ``--averaging reach``) and, for
comparison at the same iterations, the PaEmd and soft PaEmd curves of the GPU run
(``docs/benchmarks/numeral211_figure5_full_gpu.json``) cut at 256 iterations.

    python benchmarks/numeral211_figure5_collect.py
    python benchmarks/bench_numeral211_figure5.py --report-only --iterations 256 \\
        --work runs/n211_full_28_report --out docs/benchmarks/numeral211_figure5_full_distill \\
        --reference docs/benchmarks/numeral211_reference_cfr.json \\
        --reference docs/benchmarks/numeral211_reference_cfrplus.json
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "runs" / "n211_full_28", ROOT / "runs" / "n211_full_28_reach"]
GPU_RUN = ROOT / "docs" / "benchmarks" / "numeral211_figure5_full_gpu.json"
WORK = ROOT / "runs" / "n211_full_28_report"
CUT = 256


def main() -> None:
    for sub in ("cfr", "cfrplus"):
        (WORK / sub).mkdir(parents=True, exist_ok=True)
        for source in SOURCES:
            for path in sorted((source / sub).glob("*.json")):
                shutil.copy(path, WORK / sub / path.name)
    gpu = json.loads(GPU_RUN.read_text())
    for algo, sub in (("cfr", "cfr"), ("cfr+", "cfrplus")):
        for run in gpu["panels"][algo]["runs"]:
            if not (run["label"].startswith("paemd")
                    or run["label"] == "soft: PaEmd seed 0 centres, T = 0.5"):
                continue
            cut = {**run, "curve": [p for p in run["curve"] if p["iteration"] <= CUT],
                   "iterations": CUT, "done": True,
                   "source": f"{GPU_RUN.relative_to(ROOT)} (cut at {CUT} iterations)"}
            name = "".join(c if c.isalnum() else "_" for c in run["label"]) + ".gpu.json"
            (WORK / sub / name).write_text(json.dumps(cut))
    print(f"collected into {WORK}")


if __name__ == "__main__":
    main()
