"""Numeral211 on a CUDA GPU in one timed run: a check against the CPU, the exact full-game
iteration's speed, then Figure 5's curves and the clusterings' CFR-BR floors as parallel
worker processes until a deadline.

Steps (each in its own process, so that this driver holds no CUDA context):

1. ``--step check`` (fails fast, exit 1): on the 789TA deck, exact CFR+ on the classes, an
   abstract solve on an EHS bucket map and on its soft clustering run on the GPU and on the
   CPU in float64: their exact exploitabilities must agree to 1e-9 after one iteration (the
   same uniform profile: the best responses' folds and showdowns) and to 1e-2 after four
   (rounding-level regrets may break ties differently).  The GPU runs the batched per-board
   products (``Numeral211ClassGame.batched``), the CPU the per-board loop, so this also
   checks the two forms against each other.  HandEbdNet
   trains two epochs on the GPU.  On the full 40-card game, exact vanilla CFR's
   exploitability at iterations 1, 2, 4, 8 must match the committed CPU reference curve
   (``docs/benchmarks/numeral211_reference_cfr.json``) to 1e-2 (the differences are
   recorded), as must the seed-0 EHS abstract curve the CPU's; the seconds per exact
   iteration, per best response and the peak GPU memory are recorded (the GPU alone).
2. NVIDIA MPS is started when ``nvidia-cuda-mps-control`` is there and a probe process
   works through it (the workers' small kernels then share the GPU instead of taking turns);
   otherwise the workers share it by time slices.
3. A pool of ``--workers`` processes runs, in priority order, the jobs of
   ``benchmarks/bench_numeral211_figure5.py --device cuda`` (HandEbdNet trainings first, as
   they are long; then the clusterings' vanilla CFR curves, soft clustering, the CFR+ panel)
   and ``tensorcfr numeral211 solve --cfr-br`` floors.  Figure 5 jobs get ``--stop-after``
   the time left, so they checkpoint and stop cleanly at ``--seconds``; a floor starts only
   when its estimated time fits.

Everything lands under ``--work``: ``check.json``, ``summary.json``, ``logs/``,
``cfr/*.json`` and ``cfrplus/*.json`` (the curves; redraw the figure with
``bench_numeral211_figure5.py --report-only --work ...``, which adds the floors),
``floors/<name>.json`` (a floor's curve) and ``floors/<name>.out.json`` (its ``--json``
result: ``floor_mbg``, ``seats`` ...).
Run from the repository root on the GPU machine::

    python benchmarks/bench_numeral211_gpu.py --work runs/figure5_gpu --seconds 480 \\
        --inputs runs/figure5_full/inputs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

FIGURE5 = [sys.executable, "-W", "ignore", str(ROOT / "benchmarks/bench_numeral211_figure5.py")]
CLI = [sys.executable, "-W", "ignore", "-c", "from tensorcfr.cli.main import main; main()"]
NETWORKS = {
    "HandEbdNet MLP balanced sharpness 0.1": {"net": "mlp", "balance": 1.0, "sharpness": 0.1},
    "HandEbdNet conv balanced sharpness 0.1": {"net": "conv", "balance": 1.0,
                                               "sharpness": 0.1},
    "HandEbdNet MLP balanced sharpness 0.5": {"net": "mlp", "balance": 1.0, "sharpness": 0.5},
    "HandEbdNet conv paper's loss": {"net": "conv"},
}
"""The networks trained on the GPU (labels = Figure 5 settings; train_embedding keywords)."""
FIRST = ["paemd --seeds 2", "krwemd --only early", "ehs --seeds 0"]
"""The settings the CPU ran first (256 iterations): their GPU curves cross-check the CPU's."""
REST = ["paemd --seeds 0", "paemd --seeds 1", "krwemd --only late", "krwemd --only equal",
        "ehs --seeds 1", "ehs --seeds 2"]
CUDA_TESTS = ["tests/test_core_regret.py", "tests/test_best_response.py",
              "tests/test_numeral211_embedding.py", "tests/test_numeral211_class_storage.py"]
"""Test files holding the suite's CUDA tests (selected by ``-k cuda``)."""
FLOORS = {"paemd_seed_2": "method_paemd_seed_2.npz",
          "krwemd_early": "method_krwemd_weights_3_5_7_5_7.npz",
          "ehs_seed_0": "method_ehs_seed_0.npz"}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------------- step 1: check
class Mismatch(AssertionError):
    """The GPU's numbers differ from the CPU's: the run stops (exit 1)."""


def agree(label: str, gpu: float, cpu: float, rel: float) -> None:
    if not abs(gpu - cpu) <= rel * abs(cpu):
        raise Mismatch(f"{label}: GPU {gpu!r} against CPU {cpu!r} (relative tolerance {rel})")


def check(work: Path, cpu_curves: Path, device: str = "cuda") -> dict[str, Any]:
    """GPU against CPU on a small deck, the full game (exact, and abstract on the seed-0
    EHS map) against the committed CPU curves, and their speed on the GPU alone.  Raises
    :class:`Mismatch` when numbers differ; other errors are recorded under ``errors`` (the
    pool's jobs then fail on their own, quickly).  ``device="cpu"`` is a dry run: the
    "GPU" side is the CPU with the batched products switched on."""
    import traceback

    import numpy as np
    import torch

    from tensorcfr.abstraction.bucket_map import load_bucket_map
    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver,
                                                                   bucket_embeddings,
                                                                   phi_embeddings)
    from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.abstraction.embedding_net import train_embedding
    from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering

    torch.set_num_threads(1)
    on_gpu = device != "cpu"
    target = torch.device(device)
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    out: dict[str, Any] = {"torch": torch.__version__, "errors": {},
                           "gpu": torch.cuda.get_device_name(target) if on_gpu else None}

    def build(config: Any, where: Any, dtype: Any = torch.float32) -> Any:
        game = n211.build_game(config, dtype=dtype, device=where)
        if not on_gpu and where is target:
            n211.class_game(game).batched = True  # the dry run's "GPU" side
        return game

    def part(name: str, run: Callable[[], Any]) -> None:
        start = time.perf_counter()
        try:
            out[name] = run()
        except Mismatch:
            raise
        except Exception:  # noqa: BLE001 - recorded, the other parts still run
            out["errors"][name] = traceback.format_exc()
            log(f"{name} failed:\n{out['errors'][name]}")
        log(f"{name}: {out.get(name)} ({time.perf_counter() - start:.1f} s)")

    def small_deck() -> dict[str, Any]:
        small = GameConfig(ranks="789TA")
        bmap = build_abstraction(small, flop=8, turn=24, method="ehs", seed=0)
        soft = soft_clustering(small, bmap, 0.5)
        values: dict[str, dict[str, float]] = {}
        for name, where in (("cpu", "cpu"), ("gpu", target)):
            game = build(small, where, torch.float64)  # float32 rounding drifts apart
            solver = n211.ClassStorageCFR(game, "cfr+")
            row = {}
            for t in (1, 4):
                solver.iterate(t - solver.iteration)
                row[f"exact cfr+ {t}"] = n211.class_exploitability(
                    solver.game, solver.average_class_policy()).exploitability
            for label, emb in (("ehs buckets", lambda: bucket_embeddings(game, bmap)),
                               ("soft ehs", lambda: phi_embeddings(game, soft.phi)[0])):
                abstract = abstract_solver(game, emb(), algo="cfr")
                for t in (1, 4):
                    abstract.iterate(t - abstract.iteration)
                    row[f"{label} {t}"] = abstract.exploitability()
            if name == "gpu" and not n211.class_game(game).batched:
                raise Mismatch("the GPU should run the batched per-board products")
            values[name] = row
        for key, value in values["cpu"].items():  # after 1 iteration: the same profile
            agree(f"789TA {key}", values["gpu"][key], value, 1e-9 if key.endswith(" 1") else 1e-2)
        values["relative_difference"] = {k: abs(values["gpu"][k] / v - 1)
                                         for k, v in values["cpu"].items()}
        return values

    def training() -> dict[str, Any]:
        emb = train_embedding(GameConfig(ranks="789TA"), 8, 24, epochs=2, device=target)
        assert all(np.isfinite(emb.phi[r]).all() for r in (1, 2))
        return {k: emb.meta.get(k) for k in ("loss", "device", "seconds")}

    def full_game(label: str, make: Callable[[Any], Any], evaluate: Callable[[Any], float],
                  expected: dict[int, float], iterations: int = 8) -> dict[str, Any]:
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        game = build(GameConfig(), target)
        solver = make(game)
        sync()
        built = time.perf_counter() - start
        seconds, evals, curve = [], [], []
        while solver.iteration < iterations:
            sync()
            start = time.perf_counter()
            solver.iterate(1)
            sync()
            seconds.append(time.perf_counter() - start)
            t = solver.iteration
            if t & (t - 1) == 0:
                start = time.perf_counter()
                value = evaluate(solver)
                sync()
                evals.append(time.perf_counter() - start)
                curve.append({"iteration": t, "gpu": value, "cpu": expected.get(t)})
        for point in curve:  # float32, other summation orders: a guard against gross errors
            if point["cpu"] is not None:
                point["relative_difference"] = abs(point["gpu"] / point["cpu"] - 1)
                agree(f"{label} at {point['iteration']}", point["gpu"], point["cpu"], 1e-2)
        return {"build_seconds": built, "curve": curve, "iteration_seconds": seconds,
                "steady_iteration_seconds": float(np.mean(seconds[1:])),
                "evaluation_seconds": evals,
                "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None}

    def exact() -> dict[str, Any]:
        reference = json.loads((ROOT / "docs/benchmarks/numeral211_reference_cfr.json"
                                ).read_text())
        return full_game(
            "full game, exact vanilla CFR (chips/game)", lambda g: n211.make_solver(g, "cfr"),
            lambda s: n211.class_exploitability(s.game, s.average_class_policy(),
                                                with_policy_values=False).exploitability,
            {p["iteration"]: p["exploitability"] for p in reference["curve"]})

    def abstract() -> dict[str, Any]:
        from tensorcfr.games.numeral211.game.config import GameConfig as Config

        bmap = load_bucket_map(work / "inputs" / "method_ehs_seed_0.npz")
        path = cpu_curves / "ehs_seed_0.json"
        expected = ({p["iteration"]: p["mbg"] for p in json.loads(path.read_text())["curve"]}
                    if path.is_file() else {})
        config = Config()
        return full_game(
            "full game, EHS seed 0, vanilla CFR (mb/g)",
            lambda g: abstract_solver(g, bucket_embeddings(g, bmap), algo="cfr"),
            lambda s: n211.to_mbg(s.exploitability(), config), expected)

    part("small_deck", small_deck)
    part("training_smoke", training)
    part("full_game_exact", exact)
    part("full_game_abstract", abstract)
    return out


# ---------------------------------------------------------------------- step 2: MPS
def start_mps() -> bool:
    """Start the MPS control daemon and probe it; stop it again when the probe fails."""
    if shutil.which("nvidia-cuda-mps-control") is None:
        return False
    try:
        subprocess.run(["nvidia-cuda-mps-control", "-d"], timeout=20, check=True)
        probe = subprocess.run([sys.executable, "-c", "import torch; "
                                "print(float(torch.ones(4, device='cuda').sum()))"],
                               timeout=90, capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == "4.0":
            return True
    except (subprocess.SubprocessError, OSError):
        pass
    stop_mps()
    return False


def stop_mps() -> None:
    try:
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, timeout=20)
    except (subprocess.SubprocessError, OSError):
        pass


# ---------------------------------------------------------------------- step 3: pool
def jobs(work: Path, iterations: int, floor_iterations: int, device: str = "cuda",
         ranks: str = "23456789TA") -> list[dict[str, Any]]:
    """The pool's jobs in priority order: name, argv (without --stop-after), kind
    (``device`` / ``ranks``: ``cpu`` and a small deck for a dry run of the pool)."""
    refs = ["--reference", str(ROOT / "docs/benchmarks/numeral211_reference_cfr.json"),
            "--reference", str(ROOT / "docs/benchmarks/numeral211_reference_cfrplus.json")]
    if ranks != "23456789TA":
        refs = []  # the committed references are the full game's
    common = ["--iterations", str(iterations), "--work", str(work), "--out",
              str(work / "figure5"), "--device", device, "--ranks", ranks,
              "--checkpoint-minutes", "2", *refs]
    out: list[dict[str, Any]] = []

    def figure5(name: str, algos: str, family_args: str) -> None:
        family, *rest = family_args.split(" ", 1)
        extra: list[str] = []
        if rest:
            option, value = rest[0].split(" ", 1)
            extra = [option, value]
        out.append({"name": name, "kind": "figure5",
                    "argv": [*FIGURE5, "--algos", algos, "--families", family, *extra,
                             *common]})

    for label, keywords in NETWORKS.items():
        out.append({"name": "train " + label, "kind": "figure5",
                    "argv": [*FIGURE5, "--algos", "cfr,cfr+", "--families", "embedding",
                             "--no-train", "--train", f"{label}={json.dumps(keywords)}",
                             *common]})
    for item in FIRST + REST:
        figure5(f"cfr {item}", "cfr", item)
    for name, file in FLOORS.items():
        out.append({"name": f"floor {name}", "kind": "floor",
                    "stdout": work / "floors" / f"{name}.out.json",
                    "argv": [*CLI, "numeral211", "solve", "--abstraction",
                             str(work / "inputs" / file), "--cfr-br", "--iterations",
                             str(floor_iterations), "--eval-every",
                             str(max(1, floor_iterations // 8)), "--device", device,
                             "--ranks", ranks,
                             "--json", "--curve", str(work / "floors" / f"{name}.json")]})
    out.append({"name": "cfr soft T=0.5", "kind": "figure5",
                "argv": [*FIGURE5, "--algos", "cfr", "--families", "soft",
                         "--temperatures", "0.5", *common]})
    for item in FIRST + REST:
        figure5(f"cfr+ {item}", "cfr+", item)
    out.append({"name": "cfr+ soft T=0.5", "kind": "figure5",
                "argv": [*FIGURE5, "--algos", "cfr+", "--families", "soft",
                         "--temperatures", "0.5", *common]})
    for t in ("0.1", "2"):
        out.append({"name": f"cfr soft T={t}", "kind": "figure5",
                    "argv": [*FIGURE5, "--algos", "cfr", "--families", "soft",
                             "--temperatures", t, *common]})
    return out


def run_pool(work: Path, todo: list[dict[str, Any]], workers: int, deadline: float,
             floor_seconds: float) -> list[dict[str, Any]]:
    """Run ``todo`` with at most ``workers`` at once until ``deadline`` (time.time());
    returns each job's name, return code, start and seconds."""
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (work / "floors").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", ""), "PYTHONUNBUFFERED": "1"}
    queue, running, done = list(todo), [], []
    while queue or running:
        now = time.time()
        for job in list(running):
            code = job["process"].poll()
            if code is not None:
                running.remove(job)
                job["log"].close()
                done.append({"name": job["name"], "returncode": code,
                             "seconds": now - job["started"]})
                log(f"done {job['name']} ({code}) after {now - job['started']:.0f} s")
        left = deadline - now
        while queue and len(running) < workers and left > 20:
            job = queue.pop(0)
            argv = list(job["argv"])
            if job["kind"] == "figure5":
                argv += ["--stop-after", f"{left:.0f}"]
            elif left < floor_seconds:
                done.append({"name": job["name"], "returncode": None, "skipped": "no time"})
                continue
            slug = "".join(c if c.isalnum() else "_" for c in job["name"])
            handle = open(logs / f"{slug}.log", "w")
            stdout = open(job["stdout"], "w") if "stdout" in job else handle  # --json output
            process = subprocess.Popen(argv, stdout=stdout, stderr=handle, env=env, cwd=ROOT)
            if stdout is not handle:
                stdout.close()  # the child holds its own descriptor
            running.append({**job, "process": process, "log": handle, "started": now})
            log(f"started {job['name']}")
        if not queue and not running:
            break
        if now > deadline + 30:  # stragglers (floors, a training past its time) are stopped
            for job in running:
                job["process"].kill()
                done.append({"name": job["name"], "returncode": "killed at the deadline",
                             "seconds": now - job["started"]})
                job["log"].close()
            running = []
            break
        time.sleep(2)
    for job in queue:
        done.append({"name": job["name"], "returncode": None, "skipped": "no time"})
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="runs/figure5_gpu")
    ap.add_argument("--inputs", default="runs/figure5_full/inputs",
                    help="bucket maps of bench_numeral211_figure5.py (copied into --work)")
    ap.add_argument("--cpu-curves", default="runs/figure5_full/cfr",
                    help="the CPU's Figure 5 run files (their first points are checked)")
    ap.add_argument("--seconds", type=float, default=480.0,
                    help="deadline for the pool, from the driver's start")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=1024)
    ap.add_argument("--floor-iterations", type=int, default=256)
    ap.add_argument("--floor-seconds", type=float, default=150.0,
                    help="a floor starts only with this much time left")
    ap.add_argument("--step", choices=["all", "check"], default="all")
    ap.add_argument("--device", default="cuda", help="the pool's device (cpu: a dry run)")
    ap.add_argument("--ranks", default="23456789TA", help="the pool's deck (a dry run: 789TA)")
    ap.add_argument("--skip-check", action="store_true", help="no step 1 (a CPU dry run)")
    ap.add_argument("--cuda-tests", action="store_true",
                    help="run the suite's CUDA tests beside the pool (cuda_tests.log)")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.step == "check":
        try:
            result = check(work, Path(args.cpu_curves), args.device)
        except Mismatch as exc:
            (work / "check.json").write_text(json.dumps({"mismatch": str(exc)}, indent=1))
            log(f"MISMATCH: {exc}")
            raise SystemExit(1)
        (work / "check.json").write_text(json.dumps(result, indent=1))
        return
    started = time.time()
    deadline = started + args.seconds
    summary: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True)
        summary["nvidia_smi"] = smi.stdout.strip()
    summary["cpus"] = os.cpu_count()
    inputs = work / "inputs"
    inputs.mkdir(exist_ok=True)
    for file in Path(args.inputs).glob("*.npz"):
        shutil.copy(file, inputs / file.name)
    log("check")
    code = 0 if args.skip_check else subprocess.run(
        [sys.executable, "-W", "ignore", __file__, "--step", "check", "--work", str(work),
         "--cpu-curves", args.cpu_curves, "--device", args.device],
        cwd=ROOT).returncode
    summary["check_returncode"] = code
    summary["check_seconds"] = time.time() - started
    if code != 0:
        (work / "summary.json").write_text(json.dumps(summary, indent=1))
        raise SystemExit(1)
    tests = None
    if args.cuda_tests:  # beside the pool: the GPU tests of the suite (skipped without CUDA)
        handle = open(work / "cuda_tests.log", "w")
        tests = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p",
                                  "no:cacheprovider", "-k", "cuda", *CUDA_TESTS],
                                 stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT)
    summary["mps"] = args.device == "cuda" and start_mps()
    log(f"MPS: {summary['mps']}")
    try:
        todo = jobs(work, args.iterations, args.floor_iterations, args.device, args.ranks)
        summary["jobs"] = run_pool(work, todo, args.workers, deadline, args.floor_seconds)
    finally:
        if summary["mps"]:
            stop_mps()
    if tests is not None:
        try:
            summary["cuda_tests_returncode"] = tests.wait(timeout=120)
        except subprocess.TimeoutExpired:
            tests.kill()
            summary["cuda_tests_returncode"] = "killed after 120 s"
    summary["seconds"] = time.time() - started
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    log("finished")


if __name__ == "__main__":
    main()
