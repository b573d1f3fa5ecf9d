"""Tensor CFR solvers on a :class:`~tensorcfr.core.tree.LevelTree` (any flattened game).

The solvers here take a built tree and know no game library: the OpenSpiel adapter that
accepts game strings (:mod:`tensorcfr.games.openspiel.solvers`) flattens the game and
subclasses them.

One iteration is a handful of whole-tensor operations per tree level:

* forward pass: reach probabilities ``reach[q, n]`` of every player ``q`` at every
  non-terminal level's nodes, gathered top-down from the parents and multiplied by the
  edge probability of the player acting at the parent (chance's reach is constant: it is
  computed once, and a level where it is the same everywhere keeps one number);
* backward pass: expected values ``values[n]`` of the updating player under the current
  strategy profile, accumulated bottom-up into the parents with a segment sum
  (``scatter_add_``: measured faster here than ``index_add_`` and than per-level sparse CSR
  mat-vecs, see docs/generic_engine.md);
* regrets, level by level: ``cf_reach(h) * (v(h a) - v(h))`` for every decision edge
  (``cf_reach`` multiplied once per parent, then gathered), summed per infoset-action slot
  with ``scatter_add_`` straight into the cumulative regrets (the counterfactual regret of
  CFR, added history by history in OpenSpiel's order).

The reach and value passes, the average update and regret matching are the
game-independent steps of :mod:`tensorcfr.core.level_graph` and
:mod:`tensorcfr.core.regret`, shared with the Pasur solver.

Nodes of all levels keep the tree's order (children in action order, so sums run in
OpenSpiel's order) and are laid out flat by depth, level ``d`` occupying
``[level_start[d], level_start[d+1])`` of the edge probabilities; values and reach exist
only for levels with inner nodes (a level of terminals only reads the utilities, which
are stored for terminal nodes only, once: the tree's own compact arrays when dtype and
device match).  Long levels are processed in chunks of
:data:`~tensorcfr.core.flat_tree.PASS_CHUNK` nodes, so every scratch buffer is
chunk-sized.  Internally the solver numbers infosets and slots player by player (stable),
so each player's regrets and averages are contiguous views; every public tensor is
returned in the tree's slot order.  That layout is built once by
:class:`~tensorcfr.core.flat_tree.FlatTree`, and the per-level views each pass reads by
:class:`~tensorcfr.core.pass_views.LevelViews`; this module holds the solver's state, the
torch passes and the public API (:mod:`tensorcfr.core.cfr` re-exports its public names).

Small trees on CPU (float64, alternating updates, at most ``NUMPY_FAST_PATH_MAX_NODES``
nodes) run the same operations through numpy on views of the same buffers
(:class:`~tensorcfr.core.numpy_passes.NumpyPasses`): bitwise the same results, a fraction of the dispatch overhead.

Variants and updates follow :mod:`tensorcfr.core.regret`; with ``alternating=True``
(the default, like OpenSpiel's ``CFRSolver``) player 0 is updated first and player 1
then plays against player 0's new strategy, and so on.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core import level_graph
from tensorcfr.core.flat_tree import FlatTree, chunks
from tensorcfr.core.lean_passes import CHUNK as LEAN_CHUNK
from tensorcfr.core.lean_passes import LeanPasses, lean_pass_bytes
from tensorcfr.core.numpy_passes import NumpyPasses
from tensorcfr.core.pass_views import LevelViews
from tensorcfr.core.policy_io import read_checkpoint, save_checkpoint
from tensorcfr.core.regret import (
    CFRVariant,
    average_decay,
    discount_factor,
    discount_regrets,
    normalize_strategy,
    positive_regret_bound,
    regret_matching_into,
    regret_tolerance,
)
from tensorcfr.core.static_passes import StaticPasses
from tensorcfr.core.tree import LevelTree, estimate_tree_bytes
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.utils.resources import (
    DEFAULT_THREADS,
    format_bytes,
    memory_budget,
    release_free_memory,
    set_threads,
)

__all__ = [
    "TensorCFRSolver",
    "CFRSolver",
    "CFRPlusSolver",
    "LinearCFRSolver",
    "DCFRSolver",
    "PCFRPlusSolver",
    "policy_values",
    "load_checkpoint",
    "resolve_device",
    "resolve_dtype",
]

NUMPY_FAST_PATH_MAX_NODES = 5_000
"""Default largest tree (nodes) run through the numpy fast path on CPU (see
:class:`NumpyPasses`; measured in benchmarks/bench_generic_micro.py)."""

NUMBA_MIN_NODES = 100_000
"""Default smallest tree (nodes) run through the compiled loops of
:mod:`tensorcfr.core.numba_passes` on CPU (1.5-1.6x faster per iteration than the torch
passes on liars_dice and tic_tac_toe, docs/engine_profile.md); loading the compiled code
takes about a second and ~40 MiB once per process, which smaller trees do not repay."""

PASSES = ("auto", "torch", "lean")
"""The pass families a solver can be asked for (``passes=``): ``auto`` (numpy for small
trees, the compiled loops from :data:`NUMBA_MIN_NODES` nodes on CPU, the torch passes
otherwise), ``torch`` (the torch passes everywhere: what a GPU runs; numba never loads) and
``lean`` (:mod:`tensorcfr.core.lean_passes`: no per-node state between iterations, CPU,
float64, alternating updates)."""

AUTO_FLOAT32_MIN_NODES = 5_000_000
"""``dtype="auto"`` (the default) solves trees of more than this many nodes in float32 (half
the memory of every float array, 1.4-2.2x faster in docs/benchmarks/openspiel.md) and
smaller ones in float64, where parity with OpenSpiel is tested to 1e-9 and better."""

_DTYPES = {"float64": torch.float64, "double": torch.float64, "float32": torch.float32,
           "float": torch.float32}


def resolve_dtype(dtype: torch.dtype | str, num_nodes: int | None = None) -> torch.dtype:
    """``torch.float64``/``"float64"`` or ``torch.float32``/``"float32"``; ``"auto"``:
    float32 for trees of more than :data:`AUTO_FLOAT32_MIN_NODES` nodes (``num_nodes``),
    else float64.  Anything else is a one-line :class:`TensorCFRError`."""
    if isinstance(dtype, str) and dtype.strip().lower() == "auto":
        large = num_nodes is not None and num_nodes > AUTO_FLOAT32_MIN_NODES
        return torch.float32 if large else torch.float64
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise TensorCFRError(f"dtype must be float64 or float32, got {dtype}")
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    if key not in _DTYPES:
        raise TensorCFRError(f"dtype must be float64, float32 or auto, got {dtype!r}")
    return _DTYPES[key]


def resolve_device(device: torch.device | str | None) -> torch.device:
    """A usable torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``...); one-line
    :class:`TensorCFRError` otherwise (see :func:`tensorcfr.utils.device.resolve_device`:
    ``meta`` and unavailable devices are refused)."""
    from tensorcfr.utils.device import resolve_device as _resolve

    return _resolve(device, "device")


def _regret_matching_uniform(regrets: Tensor, action_infoset: Tensor, totals: Tensor,
                             uniform: Tensor, zero: Tensor, out: Tensor,
                             buffers: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """:func:`regret_matching` with preallocated buffers (``totals`` [I], ``zero`` a 0-dim
    tensor, the uniform strategy [A]), written into ``out``; bitwise the same result.
    With ``buffers`` (two 1-D scratch tensors of one length C) the slots go in chunks of
    C, so no temporary of the slots' size is allocated (the same additions in the same
    order)."""
    if buffers is None or buffers[0].numel() >= regrets.numel():
        return regret_matching_into(regrets, action_infoset, totals, uniform, zero, out=out)
    first, second = buffers
    pieces = chunks(int(regrets.numel()), int(first.numel()))
    tol = regret_tolerance(regrets.dtype)
    totals.zero_()
    for c0, c1 in pieces:
        magnitude = torch.abs(regrets[c0:c1], out=first[:c1 - c0])
        totals.index_add_(0, action_infoset[c0:c1], magnitude)
    bound = positive_regret_bound(totals, None, tol).clone()  # [I]

    def positive_part(c0: int, c1: int) -> Tensor:
        slot_bound = torch.index_select(bound, 0, action_infoset[c0:c1], out=second[:c1 - c0])
        return torch.where(regrets[c0:c1] > slot_bound, regrets[c0:c1], zero,
                           out=first[:c1 - c0])

    totals.zero_()
    for c0, c1 in pieces:
        totals.index_add_(0, action_infoset[c0:c1], positive_part(c0, c1))
    for c0, c1 in pieces:
        positive = positive_part(c0, c1)
        slot_totals = torch.index_select(totals, 0, action_infoset[c0:c1],
                                         out=second[:c1 - c0])
        torch.where(slot_totals > zero, positive.div_(slot_totals), uniform[c0:c1],
                    out=out[c0:c1])
    return out




class TensorCFRSolver:
    """Tensor CFR for any game flattened into a :class:`LevelTree`.

    Args:
        game: the game flattened into a :class:`LevelTree` (for an OpenSpiel game string
            or ``pyspiel.Game`` use :mod:`tensorcfr.games.openspiel.solvers`, whose solvers
            flatten it first and then run this class).
        algo: ``"cfr"``, ``"cfr+"``, ``"lcfr"``, ``"dcfr"`` or ``"pcfr+"`` (or a
            :class:`CFRVariant`).
        alternating: alternating updates (default, as OpenSpiel) or simultaneous updates.
        alpha, beta, gamma: Discounted-CFR parameters (``gamma`` also sets the averaging
            exponent of ``pcfr+``); ``None`` keeps the defaults 1.5, 0, 2.
        device: torch device (``"cpu"``, ``"cuda"``...).
        dtype: ``"auto"`` (default: float64, the precision of the parity tests, up to
            :data:`AUTO_FLOAT32_MIN_NODES` nodes, float32 above; :attr:`dtype_auto` says
            whether it was chosen so), ``torch.float64`` or ``torch.float32``.
        max_memory_bytes: refuse (``MemoryLimitError``) when the estimated memory of the tree
            plus solver exceeds this budget (a game string's walk too): bytes, a size such as
            ``"8G"``, ``"auto"`` (the default: 80 % of the memory available now, of a CUDA
            device's free memory on a GPU; :func:`~tensorcfr.utils.resources.memory_budget`)
            or ``None`` (no limit).
        threads: torch intra-op threads, set for the whole process with
            ``torch.set_num_threads`` when the solver is built (default 1, as the CLI's
            ``--threads``: on the 2-core reference machine torch's default thread count made
            ``CFRSolver("tiny_bridge_2p").iterate(100)`` 30x slower, 68-80 ms against
            2.3-2.6 ms per iteration; see docs/benchmarks/threads.md).  ``None`` leaves
            torch's setting as it is.
        passes: which passes run the iterations (:data:`PASSES`): ``"auto"`` (the
            default), ``"torch"`` or ``"lean"`` (the memory-lean passes: on liars_dice
            about a third of the torch passes' memory and a tenth of the compiled passes',
            at about half their speed; docs/benchmarks/engine_memory.md).  ``"lean"``
            needs the CPU and alternating updates and computes in float64 (``dtype`` auto
            or float64).
        cuda_graph: on a CUDA device, run the first iteration eagerly, capture the second
            (the whole iteration, every player) as a CUDA graph and replay it from then on:
            one launch per iteration instead of a few hundred (the passes have static
            shapes and read the iteration's numbers from device tensors; see
            docs/engine_profile.md).  A one-line :class:`TensorCFRError` on other devices.

    On CPU, trees from :data:`NUMBA_MIN_NODES` nodes with alternating updates run through
    the compiled loops of :mod:`tensorcfr.core.numba_passes` (bitwise the torch passes'
    results, 1.5x faster), smaller ones through numpy (:class:`NumpyPasses`).

    The API mirrors OpenSpiel's ``CFRSolver``: :meth:`evaluate_and_update_policy` runs one
    iteration, :meth:`average_policy` / :meth:`current_policy` return the policies (here as
    tensors over the tree's action slots; the OpenSpiel subclasses add
    ``average_policy_tabular`` for an OpenSpiel ``TabularPolicy``).
    """

    numpy_fast_path_max_nodes: int = NUMPY_FAST_PATH_MAX_NODES
    """Trees up to this many nodes on CPU with alternating updates use :class:`NumpyPasses`
    (the same operations dispatched through numpy: identical results, less overhead)."""

    numba_min_nodes: int | None = NUMBA_MIN_NODES
    """CPU solvers with alternating updates on trees of at least this many nodes run
    through the compiled loops of :mod:`tensorcfr.core.numba_passes` (bitwise the torch
    path's results); None keeps the torch passes."""

    lean_chunk: int = LEAN_CHUNK
    """Most nodes one numpy operation of the lean passes touches (``passes="lean"``;
    :data:`tensorcfr.core.lean_passes.CHUNK`); the tests cut levels finer."""

    compiled_passes: str = "pruned"
    """Which compiled CPU passes run (:class:`tensorcfr.core.numba_passes.NumbaPasses`):
    ``"pruned"`` (skip the histories no player reaches, where the fused layout applies),
    ``"fused"`` (every history) or ``"level"`` (per-level loops); the benchmarks and tests
    compare them."""

    static_iterations: bool = False
    """Run the graph-ready iteration (static shapes, the iteration's numbers in device
    tensors) eagerly on any device, as ``cuda_graph=True`` captures it; the CPU checks of
    tests/test_core_static.py use it."""

    fused_static_passes: bool = True
    """Run the graph-ready iteration through :class:`~tensorcfr.core.static_passes.StaticPasses`
    (whole levels, a player's regret update in one gather: 2.3-2.7x fewer operators, so
    kernels in a CUDA graph; bitwise the same results on the CPU); False runs it through the
    torch passes level by level (the first CUDA-graph path, kept for comparisons:
    benchmarks/bench_engine_gpu.py)."""

    static_streams: bool = False
    """With the static passes on CUDA and alternating updates: run each player's forward
    pass on a second stream, beside the next player's backward pass (parallel branches of
    the CUDA graph; the same operations on the same values).  Off until measured on a GPU
    (benchmarks/bench_engine_gpu.py, ``gpu_graph_streams``)."""

    def __init__(self, game: LevelTree, algo: str | CFRVariant = "cfr",
                 alternating: bool = True, alpha: float | None = None,
                 beta: float | None = None, gamma: float | None = None,
                 device: torch.device | str | None = "cpu",
                 dtype: torch.dtype | str = "auto",
                 max_memory_bytes: int | str | None = "auto",
                 threads: int | None = DEFAULT_THREADS, cuda_graph: bool = False,
                 passes: str = "auto") -> None:
        if passes not in PASSES:
            raise TensorCFRError(f"passes must be one of {', '.join(PASSES)}, not {passes!r}")
        self.passes = passes
        lean = passes == "lean"
        if threads is not None:
            set_threads(threads)
        self.threads = torch.get_num_threads()
        self.variant = algo if isinstance(algo, CFRVariant) else CFRVariant.parse(
            algo, alpha, beta, gamma)
        self.alternating = bool(alternating)
        self.device = resolve_device(device)
        if cuda_graph and self.device.type != "cuda":
            raise TensorCFRError(f"cuda_graph needs a CUDA device, not {self.device}")
        resolve_dtype(dtype)  # a bad value fails before the (possibly long) walk
        self.dtype_auto = isinstance(dtype, str) and dtype.strip().lower() == "auto"
        if lean:
            self._check_lean(dtype)  # (cuda_graph is refused above off a CUDA device)
        max_memory_bytes = memory_budget(max_memory_bytes, self.device)
        tree = self._build_tree(game, max_memory_bytes)
        self.dtype = torch.float64 if lean else resolve_dtype(dtype, tree.num_nodes)
        lean_estimate = (estimate_tree_bytes(tree.num_nodes, tree.num_slots,
                                             tree.num_infosets, tree.num_players, 8,
                                             solver=False)
                         + 8 * 8 * tree.num_slots + lean_pass_bytes(tree))
        if lean:  # the tree, the slot-sized state and the passes' working rows
            estimate = lean_estimate
        else:
            estimate = estimate_tree_bytes(tree.num_nodes, tree.num_slots, tree.num_infosets,
                                           tree.num_players,
                                           torch.empty((), dtype=self.dtype).element_size())
        self.estimated_memory_bytes = estimate
        if max_memory_bytes is not None and estimate > max_memory_bytes:
            hint = ""
            if (not lean and lean_estimate <= max_memory_bytes and self.alternating
                    and self.device.type == "cpu"):
                hint = (f"; the lean passes (passes='lean', --passes lean) need about "
                        f"{format_bytes(lean_estimate)}")
            raise MemoryLimitError(
                f"{tree.game_string}: the solver needs about {format_bytes(estimate)} "
                f"({tree.num_nodes} nodes, {tree.num_slots} action slots), more than the "
                f"limit of {format_bytes(max_memory_bytes)}{hint}")
        started = time.perf_counter()
        self.tree = tree
        self._flat = FlatTree(tree, self.device, self.dtype, node_arrays=not lean)
        if not lean:
            self._build_utilities()
        self.setup_seconds = tree.setup_seconds + (time.perf_counter() - started)
        self.iteration = 0
        flat = self._flat
        slots = flat.num_slots
        kw = {"dtype": self.dtype, "device": self.device}
        # Internal slot order (grouped by player); per-player views are taken once.
        self._regrets = self._zeros(slots)
        self._cumulative_strategy = self._zeros(slots)
        # PCFR+ only: last instantaneous regrets (other variants keep an empty tensor and
        # report zeros).
        self._predictions = self._zeros(slots if self.variant.predictive else 0)
        # Regret matching on zero regrets: the uniform strategy.
        self._strategy = self._zeros(slots)
        self._slot_views = [slice(a0, a1) for a0, a1 in flat.slot_range]
        for p, view in enumerate(self._slot_views):
            # (the lean passes keep no uniform strategy: SlotUpdates makes it when needed)
            uniform = flat.uniform_strategy(p) if lean else flat.uniform[p]
            if self.device.type == "cpu":
                self._strategy.numpy()[view] = uniform.numpy()
            else:
                self._strategy[view] = uniform
        # Persistent per-node buffers (in-place updates, so per-level views stay valid);
        # the lean passes keep none (built on first access, see __getattr__).
        self._slot_state_views()
        if lean:
            self._node_buffers_released = True
        else:
            self._slot_buffers()
            self._build_node_buffers()
        # Static iterations (CUDA graphs): every per-iteration number the passes read is
        # in a device tensor filled before the iteration, so the same kernels with the same
        # arguments serve every iteration.  [average decay, discount of positive regrets,
        # of negative regrets] (see _static_finish).
        self.cuda_graph = bool(cuda_graph)
        static = self.cuda_graph or self.static_iterations
        self._static_scalars: Tensor | None = torch.zeros(3, **kw) if static else None
        self._graph: Any = None
        self._static_passes: StaticPasses | None = (
            StaticPasses(self) if static and self.fused_static_passes else None)
        self._lean_passes: LeanPasses | None = LeanPasses(self, self.lean_chunk) if lean else None
        self._numpy_passes: NumpyPasses | None = None
        if (not static and not lean and passes != "torch" and self.alternating
                and self.device.type == "cpu"
                and self.dtype == torch.float64
                and flat.num_nodes <= self.numpy_fast_path_max_nodes
                and flat.max_level_nodes <= flat.chunk):
            self._numpy_passes = NumpyPasses(self)
        self._numba_passes: Any = None
        if (not static and passes == "auto" and self._numpy_passes is None
                and self.numba_min_nodes is not None
                and flat.num_nodes >= self.numba_min_nodes and self.alternating
                and self.device.type == "cpu"):
            from tensorcfr.core import numba_passes

            if numba_passes.AVAILABLE:
                self._numba_passes = numba_passes.NumbaPasses(
                    self, fused=self.compiled_passes != "level",
                    pruned=self.compiled_passes == "pruned")
                if self._numba_passes.kind != "level":
                    self._release_node_buffers()  # (before their first iteration)
        self._refresh_all()
        release_free_memory()  # the set-up's temporaries

    def _zeros(self, shape: int | tuple[int, ...]) -> Tensor:
        """A zeroed tensor of the solver's dtype and device; on the CPU one over a numpy
        array (no torch kernel runs: a process running the lean passes then maps none of
        torch's fill code, docs/benchmarks/engine_memory.md)."""
        if self.device.type == "cpu":
            return torch.from_numpy(np.zeros(shape, dtype=torch.empty(
                (), dtype=self.dtype).numpy().dtype))
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def _check_lean(self, dtype: torch.dtype | str) -> None:
        """One-line errors for what the lean passes do not do (before any walk)."""
        if self.device.type != "cpu":
            raise TensorCFRError(f"passes='lean' runs on the CPU, not {self.device}; use "
                                 "passes='auto' on a GPU")
        if not self.alternating:
            raise TensorCFRError("passes='lean' needs alternating updates; use "
                                 "passes='torch' for simultaneous updates")
        if not self.dtype_auto and resolve_dtype(dtype) != torch.float64:
            raise TensorCFRError("passes='lean' computes in float64; leave dtype auto or "
                                 "float64 (float32 runs with passes='torch')")

    _NODE_BUFFERS = frozenset({
        "_edge_prob", "_reach", "_values", "_scratch", "_utility_levels", "_edge_a", "_edge_b",
        "_value_rows", "_load_player", "_load_all", "_backward_player", "_backward_all",
        "_gathered_player", "_gathered_all", "_mixed_factor", "_mixed_factor_views",
        "_forward_player", "_edge_views", "_cf_a", "_cf_b", "_update_views"})
    """What :meth:`_build_node_buffers` sets: the torch passes' (and the level passes')
    per-node buffers and per-level views, released when the fused compiled passes run."""

    def _build_node_buffers(self) -> None:
        """The per-node buffers of the torch passes (edge probabilities, reach rows, values,
        the backward pass's scratch) and their per-level views (:meth:`_build_pass_views`)."""
        flat = self._flat
        kw = {"dtype": self.dtype, "device": self.device}
        self._utility_levels = flat.utility_levels
        self._edge_prob = flat.edge_prob  # probability of the edge into each node
        # reach[q, n]: reach probability of player q at node n (chance's, constant, is
        # kept per level by the FlatTree).
        self._reach = torch.ones((flat.num_players, flat.num_stored), **kw)
        # Expected values of the updating player(s): alternating updates handle one player
        # at a time, so one row serves them all (levels of terminals only read the
        # utilities instead).  The edge_prob x values scratch only spans one chunk of a
        # level.
        value_rows = 1 if self.alternating else flat.num_players
        self._values = torch.zeros((value_rows, flat.num_stored), **kw)
        self._scratch = torch.zeros((value_rows, min(flat.chunk, flat.max_level_nodes)), **kw)
        self._build_pass_views()

    def _release_node_buffers(self) -> None:
        """Free what only the torch and level passes read (:data:`_NODE_BUFFERS` and the
        flat tree's per-node arrays, :meth:`FlatTree.release_node_arrays`): the fused
        compiled passes keep their own layout and read only the slot-sized state.  On
        liars_dice that is about 16 MiB (docs/benchmarks/engine_memory.md).  Anything
        that reads one of them later (switching to the level passes, as the tests and
        benchmarks do) gets them rebuilt first (:meth:`__getattr__`)."""
        for name in self._NODE_BUFFERS:
            self.__dict__.pop(name, None)
        self._flat.release_node_arrays(self.tree)
        self._node_buffers_released = True
        release_free_memory()

    def __getattr__(self, name: str) -> Any:
        """Rebuild the released node buffers (:meth:`_release_node_buffers`) on first
        access, and refresh their edge probabilities and reach rows from the current
        strategy, and the slot buffers the lean passes do without
        (:meth:`_slot_buffers`); any other missing attribute is an ``AttributeError``."""
        if name in TensorCFRSolver._SLOT_BUFFERS and "_slot_views" in self.__dict__:
            self._slot_buffers()
            return self.__dict__[name]
        if name in TensorCFRSolver._NODE_BUFFERS and self.__dict__.get(
                "_node_buffers_released", False):
            self._node_buffers_released = False
            self._flat.restore_node_arrays(self.tree)
            self._build_node_buffers()
            for p in range(self._flat.num_players):  # the torch passes' own refresh
                self._set_edges(p)
                self._forward(self._forward_player[p])
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def uses_numba(self) -> bool:
        """True when iterations run through the compiled CPU loops
        (:mod:`tensorcfr.core.numba_passes`)."""
        return self._numba_passes is not None

    @property
    def passes_used(self) -> str:
        """Which passes run the iterations: ``"lean"``, ``"numpy"`` (small trees on CPU),
        ``"compiled (pruned)"`` / ``"compiled (fused)"`` / ``"compiled (level)"``,
        ``"static"`` (the graph-ready iteration, e.g. replayed as a CUDA graph) or
        ``"torch"``."""
        if self._lean_passes is not None:
            return "lean"
        if self._numpy_passes is not None:
            return "numpy"
        if self._numba_passes is not None:
            return f"compiled ({self._numba_passes.kind})"
        if self._static_scalars is not None:
            return "static"
        return "torch"

    @property
    def uses_numpy_fast_path(self) -> bool:
        """True when iterations run through the numpy fast path (small trees on CPU)."""
        return self._numpy_passes is not None

    def _slot_state_views(self) -> None:
        """Per-player views of the slot-indexed state, and per-player slot/infoset buffers
        (the state tensors are only ever updated in place, so the views stay valid)."""
        views = self._slot_views
        self._regret_views = [self._regrets[v] for v in views]
        self._zero = self._zeros(())
        self._one = self._zeros(())
        if self.device.type == "cpu":
            self._one.numpy()[...] = 1.0
        else:
            self._one.fill_(1.0)
        self._average_views = [self._cumulative_strategy[v] for v in views]
        self._strategy_views = [self._strategy[v] for v in views]
        self._prediction_views = ([self._predictions[v] for v in views]
                                  if self.variant.predictive else [])

    _SLOT_BUFFERS = frozenset({"_own_reach_sums", "_infoset_totals"})
    """Slot-sized work buffers of the torch, numpy and compiled passes (:meth:`_slot_buffers`),
    which the lean passes do without (built on first access, :meth:`__getattr__`)."""

    def _slot_buffers(self) -> None:
        """The regret update's own reach summed per slot (one buffer: players are updated
        one after the other) and regret matching's per-infoset totals, per player."""
        views = self._slot_views
        own = self._zeros(max((v.stop - v.start for v in views), default=0))
        self._own_reach_sums = [own[:v.stop - v.start] for v in views]
        self._infoset_totals = [self._zeros(i1 - i0) for i0, i1 in self._flat.infoset_range]

    def _build_pass_views(self) -> None:
        """Precompute, per level (and per chunk of a long level), the tensor views the
        passes touch (:class:`~tensorcfr.core.pass_views.LevelViews`).

        The buffers are only ever updated in place, so these views stay valid; this removes
        all slicing from the per-iteration loops."""
        flat = self._flat
        views = LevelViews(flat, self._edge_prob)
        n_players = flat.num_players
        first = flat.first_level
        lowest_all = min(first) if first else views.depth
        kw = {"dtype": self.dtype, "device": self.device}
        # Edge buffers of the regret update (and the gathered edge probabilities).
        max_edges = max((int(pl.slot.shape[0]) for levels_p in flat.player_levels
                         for pl in levels_p), default=0)
        edge_size = min(flat.chunk, max_edges)
        self._edge_a = torch.zeros(edge_size, **kw)
        self._edge_b = torch.zeros(edge_size, **kw)
        # Values of the updating player: a player's backward pass stops at the level of
        # its shallowest decision node (values above it are never read).
        self._value_rows = [self._values[0 if self.alternating else p]
                            for p in range(n_players)]
        scratch_rows = [self._scratch[0 if self.alternating else p] for p in range(n_players)]
        self._load_player = [views.load(self._value_rows[p], p, first[p] - 1)
                             for p in range(n_players)]
        self._load_all = ([] if self.alternating else
                          views.load(self._values, None, lowest_all - 1))
        self._backward_player = [views.backward(self._value_rows[p], p,
                                                scratch_rows[p], first[p])
                                 for p in range(n_players)]
        self._backward_all = ([] if self.alternating else
                              views.backward(self._values, None, self._scratch, lowest_all))
        strategy, gathered = self._strategy_views, self._edge_b
        self._gathered_player = [views.gathered(self._value_rows[p], p, scratch_rows[p],
                                                first[p], strategy, gathered)
                                 for p in range(n_players)]
        self._gathered_all = ([] if self.alternating else
                              views.gathered(self._values, None, self._scratch, lowest_all,
                                             strategy, gathered))
        # Forward factors of mixed levels, only for the levels that have them.
        self._mixed_factor = [views.mixed_factors(p, **kw) for p in range(n_players)]
        self._mixed_factor_views = [views.mixed_factor_views(p, self._mixed_factor[p])
                                    for p in range(n_players)]
        self._forward_player = [views.forward(self._reach[p], p, first[p],
                                              self._mixed_factor[p])
                                for p in range(n_players)]
        # Setting a player's edge probabilities from its strategy, level by level.
        self._edge_views = [views.edges(p) for p in range(n_players)]
        # Regret updates: the counterfactual reach of the updating player at the parents
        # is a product of the other rows, in these buffers when there are several.
        rows_needed = n_players - 1 + (1 if flat.has_chance else 0)
        cf_size = flat.max_level_nodes if rows_needed > 1 else 0
        self._cf_a = torch.zeros(cf_size, **kw)
        self._cf_b = torch.zeros(cf_size if n_players > 2 else 0, **kw)
        self._update_views = [views.updates(self._reach, self._value_rows[p], p)
                              for p in range(n_players)]

    def _build_utilities(self) -> None:
        """The terminal utilities the passes read: per level [P, T_d] (``FlatTree``),
        the tree's own compact arrays when they have the solver's dtype and device (one
        copy of the utilities), else one [P, T] copy in the solver's dtype."""
        self._utility_levels = self._flat.utility_levels
        release_free_memory()  # the set-up's temporaries so far

    def _load_utilities(self, values: Tensor, player: int | None) -> None:
        """Fill ``values`` ([N] for ``player``, [P, N] for every player when ``player`` is
        None) with zeros at inner nodes and the terminal utilities, on the levels its
        backward pass reads."""
        views = self._load_all if player is None else self._load_player[player]
        dim = values.dim() - 1
        for level_values, terminal_index, utility in views:
            if terminal_index is not None:
                level_values.zero_()
                level_values.scatter_(dim, terminal_index, utility)
            elif utility.shape[-1]:
                level_values.copy_(utility)  # a level of terminals only
            else:
                level_values.zero_()

    @classmethod
    def checkpoint_class(cls) -> "type[TensorCFRSolver]":
        """The class :func:`load_checkpoint` builds for this solver family (one that takes
        ``algo``): :class:`TensorCFRSolver` here."""
        return TensorCFRSolver

    def _build_tree(self, game: Any, max_memory_bytes: int | None) -> LevelTree:
        """The :class:`LevelTree` to solve for ``game``: ``game`` itself here; game adapters
        (e.g. the OpenSpiel solvers) override this to flatten a game string first."""
        if isinstance(game, LevelTree):
            return game
        raise TensorCFRError(
            f"{type(self).__name__} takes a LevelTree, not {type(game).__name__} {game!r:.80}; "
            "for an OpenSpiel game use tensorcfr.games.openspiel.CFRSolver (and the other "
            "solvers there), or flatten it first with tensorcfr.games.openspiel.flatten_game")

    # ------------------------------------------------------------------ properties
    @property
    def game_string(self) -> str:
        """Canonical game string of the solved game."""
        return self.tree.game_string

    @property
    def num_players(self) -> int:
        """Number of players."""
        return self.tree.num_players

    @property
    def algo(self) -> str:
        """Name of the CFR variant."""
        return self.variant.name

    # ------------------------------------------------------------------ passes
    def _refresh_all(self) -> None:
        """Recompute edge probabilities and every player's reach row from the current
        strategy (the chance row is constant, computed once when the solver is built)."""
        if self._lean_passes is not None:
            return  # (every lean pass reads the current strategy itself)
        if self._numpy_passes is not None:
            self._numpy_passes.refresh_all()
            return
        if self._numba_passes is not None:
            self._numba_passes.refresh_all()
            return
        if self._static_passes is not None:
            self._static_passes.refresh_all()
            return
        for p in range(self._flat.num_players):
            self._set_edges(p)
            self._forward(self._forward_player[p])

    def _refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: update its edges and its reach row."""
        self._set_edges(player)
        self._forward(self._forward_player[player])

    @staticmethod
    def _forward(views: list[tuple]) -> None:
        """Top-down pass over precomputed level views: ``reach[n] = reach[parent(n)] *
        factor[n]`` (levels above a player's first action keep reach 1); the shared
        :func:`tensorcfr.core.level_graph.forward_pass` on tree levels."""
        level_graph.forward_pass(views)

    @staticmethod
    def _backward(views: list[tuple]) -> None:
        """Bottom-up pass: ``values[h] += sum_children edge_prob * values[child]`` (in place;
        the values buffer must hold the terminal utilities and zeros elsewhere); the shared
        :func:`tensorcfr.core.level_graph.backward_pass`."""
        level_graph.backward_pass(views)

    @staticmethod
    def _backward_gathered(views: list[tuple]) -> None:
        """:meth:`_backward` for a last level without stored edge probabilities: each
        chunk's probabilities are first gathered from the strategy of the player above."""
        for strategy, slot, gathered, values_child, scratch, values_parent, parent_local, \
                dim in views:
            torch.index_select(strategy, 0, slot, out=gathered)
            level_graph.backup_values(values_child, gathered, scratch, values_parent,
                                      parent_local, dim)

    def _counterfactual_reach(self, before: list[Tensor], after: list[Tensor]) -> Tensor | None:
        """Product of the other reach rows at one level's parents (players before the
        updating one, times the rows after it, chance last; each group multiplied left to
        right); None when there is no other row."""
        def product(rows: list[Tensor], out: Tensor) -> Tensor | None:
            if not rows:
                return None
            if len(rows) == 1:
                return rows[0]
            torch.mul(rows[0], rows[1], out=out)
            for row in rows[2:]:
                out.mul_(row)
            return out

        n = int((after or before or [self._cf_a])[0].shape[0])
        after_product = product(after, self._cf_a[:n])
        before_product = product(before, self._cf_b[:n])
        if before_product is None:
            return after_product
        if after_product is None:
            return before_product
        return torch.mul(before_product, after_product, out=self._cf_a[:n])

    def _player_update(self, player: int, values: Tensor) -> None:
        """Regret and average updates of ``player`` from its expected values [N]
        (``values``: the row the update views were built on)."""
        regrets = self._regret_views[player]
        if regrets.numel() == 0:
            return
        own_reach = self._own_reach_sums[player]
        own_reach.zero_()
        instant = None
        if self.variant.predictive:
            instant = self._prediction_views[player]
            instant.zero_()
        edge_a, edge_b = self._edge_a, self._edge_b
        for before, after, own, values_parent, values_level, pieces in \
                self._update_views[player]:
            # cf_reach(h) at the level's parents, multiplied in OpenSpiel's order
            # (players before p) x (after p, chance).
            counterfactual = self._counterfactual_reach(before, after)
            start = 0
            for n, child_index, parent_index, slot in pieces:
                # Instantaneous counterfactual regret of each edge: cf_reach(h) (v(ha) - v(h)).
                regret = edge_a[:n]
                gathered = edge_b[:n]
                torch.index_select(values_parent, 0, parent_index, out=regret)
                if child_index is None:
                    child = values_level[start:start + n]
                else:
                    child = torch.index_select(values_level, 0, child_index, out=gathered)
                torch.sub(child, regret, out=regret)
                if counterfactual is not None:
                    torch.index_select(counterfactual, 0, parent_index, out=gathered)
                    regret.mul_(gathered)
                if instant is not None:
                    instant.scatter_add_(0, slot, regret)
                # Regrets are added history by history straight into the cumulative
                # regrets (as OpenSpiel does: the same rounding, so regrets that cancel
                # exactly stay exactly 0), then floored / discounted.
                regrets.scatter_add_(0, slot, regret)
                # Own reach summed over the infoset's histories (one edge per history and
                # slot): times the current strategy, this iteration's average weight.
                torch.index_select(own, 0, parent_index, out=gathered)
                own_reach.scatter_add_(0, slot, gathered)
                start += n
        self._finish_update(player)

    def _finish_update(self, player: int) -> None:
        """After ``player``'s instantaneous regrets were added: floor / discount its
        regrets and add its own reach (per slot) times its strategy into the average."""
        regrets = self._regret_views[player]
        t = self.iteration
        own_reach = self._own_reach_sums[player]
        if self._static_scalars is not None:
            self._static_finish(regrets, own_reach, player)
            return
        discount_regrets(regrets, self.variant, t, out=regrets)
        # (update_average(average, own_reach x strategy); a separate multiply and add, not
        # addcmul_, measured to round differently from the numpy fast path's a + b * c.)
        level_graph.accumulate_average(self._average_views[player], own_reach,
                                       self._strategy_views[player], self.variant, t)

    def _static_finish(self, regrets: Tensor, own_reach: Tensor, player: int) -> None:
        """:meth:`_finish_update` with the iteration's numbers read from
        ``_static_scalars`` (device tensors, see :meth:`_step_scalars`): the same
        operations on the same values (a 0-dim tensor of the dtype multiplies as the
        Python number does), whatever the iteration."""
        decay, positive, negative = self._static_scalars  # type: ignore[misc]
        name = self.variant.name
        if self.variant.floors_regrets:
            regrets.clamp_min_(0)
        elif name == "lcfr":
            regrets.mul_(positive)
        elif name == "dcfr":
            regrets.mul_(torch.where(regrets >= 0, positive, negative))
        average = self._average_views[player]
        if self.variant.average_exponent() != 0.0:
            average.mul_(decay)
        average.add_(own_reach.mul_(self._strategy_views[player]))

    def _step_scalars(self, iteration: int) -> list[float]:
        """The numbers iteration ``iteration`` reads: the average decay and the discount
        factors of positive and negative regrets (as :func:`discount_regrets` and
        :func:`average_decay` compute them)."""
        variant = self.variant
        positive = negative = 1.0
        if variant.name == "lcfr":
            positive = discount_factor(iteration, 1.0)
        elif variant.name == "dcfr":
            positive = discount_factor(iteration, variant.alpha)
            negative = discount_factor(iteration, variant.beta)
        return [average_decay(variant, iteration), positive, negative]

    def _torch_iteration(self) -> None:
        """One iteration through the torch passes (any device)."""
        n_players = self._flat.num_players
        if self.alternating:
            for p in range(n_players):
                values = self._value_rows[p]
                self._load_utilities(values, p)
                self._backward_gathered(self._gathered_player[p])
                self._backward(self._backward_player[p])
                self._player_update(p, values)
                self._player_strategy(p)
                self._refresh_player(p)
        else:
            self._load_utilities(self._values, None)
            self._backward_gathered(self._gathered_all)
            self._backward(self._backward_all)
            for p in range(n_players):
                self._player_update(p, self._value_rows[p])
            for p in range(n_players):
                self._player_strategy(p)
                self._refresh_player(p)

    def _load_step_scalars(self) -> None:
        """Copy this iteration's numbers (:meth:`_step_scalars`) into ``_static_scalars``
        (one small host-to-device copy, before the iteration; none for vanilla CFR)."""
        assert self._static_scalars is not None
        if self.variant.average_exponent() != 0.0 or self.variant.name in ("lcfr", "dcfr"):
            host = torch.tensor(self._step_scalars(self.iteration), dtype=self.dtype)
            self._static_scalars.copy_(host)  # (pageable: staged before it returns)

    def _static_iteration(self) -> None:
        """One iteration with static shapes and no host synchronisation inside: the
        iteration's numbers are copied to the device first, then the passes run
        (:class:`~tensorcfr.core.static_passes.StaticPasses`, or the torch passes when
        ``fused_static_passes`` is off; eagerly at the first iteration, which also warms
        up the kernels; captured as a CUDA graph at the second and replayed from then on,
        when ``cuda_graph``)."""
        self._load_step_scalars()
        run = (self._torch_iteration if self._static_passes is None
               else self._static_passes.iteration)
        if not self.cuda_graph or self.iteration < 2:
            run()
            return
        if self._graph is None:
            device = self.device
            stream = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):  # records, does not run
                run()
            torch.cuda.current_stream(device).wait_stream(stream)
            self._graph = graph
        self._graph.replay()

    def _player_strategy(self, player: int) -> None:
        """Regret matching for ``player`` (PCFR+: on regrets + prediction)."""
        flat = self._flat
        regrets = self._regret_views[player]
        if regrets.numel() == 0:
            return
        if self.variant.predictive:
            regrets = regrets + self._prediction_views[player]
        _regret_matching_uniform(regrets, flat.local_action_infoset[player],
                                 self._infoset_totals[player], flat.uniform[player], self._zero,
                                 out=self._strategy_views[player],
                                 buffers=(self._edge_a, self._edge_b))

    def _set_edges(self, player: int) -> None:
        """Copy ``player``'s current strategy onto the edges below its decision nodes
        (``edge_prob``, and the factor buffers of mixed levels)."""
        strategy = self._strategy_views[player]
        for edge_prob, child_index, slot in self._edge_views[player]:
            if child_index is None:
                torch.index_select(strategy, 0, slot, out=edge_prob)
            else:
                edge_prob.index_copy_(0, child_index, strategy.index_select(0, slot))
        self._refresh_mixed_factors(player)

    def _refresh_mixed_factors(self, player: int) -> None:
        """The forward factors of levels where only some nodes hang below ``player``:
        its edge probability there, 1 elsewhere."""
        for mask, edge_prob, factor in self._mixed_factor_views[player]:
            torch.where(mask, edge_prob, self._one, out=factor)

    # ------------------------------------------------------------------ public API
    def evaluate_and_update_policy(self) -> None:
        """Run one CFR iteration (all players; alternating or simultaneous updates)."""
        self.iteration += 1
        if self._lean_passes is not None:
            self._lean_passes.iteration(self.iteration)
        elif self._numpy_passes is not None:
            self._numpy_passes.iteration(self.iteration)
        elif self._numba_passes is not None:
            self._numba_iteration(self._numba_passes)
        elif self._static_scalars is not None:
            self._static_iteration()
        else:
            self._torch_iteration()

    def _numba_iteration(self, passes: Any) -> None:
        """One alternating-update iteration through the compiled CPU loops
        (:mod:`tensorcfr.core.numba_passes`): the torch path's operations in its order."""
        for p in range(self._flat.num_players):
            if passes.update_player is not None and passes.update_player(p):
                continue  # (the pruned passes' sparse update: vanilla CFR)
            passes.values_and_regrets(p)
            if self._regret_views[p].numel():
                self._finish_update(p)
                regrets = self._regret_views[p]
                if self.variant.predictive:
                    regrets = regrets + self._prediction_views[p]
                passes.regret_matching(p, regrets.numpy())
            passes.refresh_player(p)

    def iterate(self, num_iterations: int = 1,
                callback: Callable[["TensorCFRSolver"], None] | None = None) -> None:
        """Run ``num_iterations`` iterations; ``callback(self)`` after each one if given."""
        if num_iterations < 0:
            raise TensorCFRError(f"number of iterations must be >= 0, got {num_iterations}")
        for _ in range(num_iterations):
            self.evaluate_and_update_policy()
            if callback is not None:
                callback(self)

    def _to_tree_order(self, internal: Tensor) -> Tensor:
        flat = self._flat
        out = torch.empty_like(internal)
        # internal slot i is tree slot tree_slot_of_internal[i]
        return out.index_copy_(0, flat.tree_slot_of_internal.long(), internal)

    def _from_tree_order(self, tree_order: Tensor) -> Tensor:
        return tree_order.to(device=self.device, dtype=self.dtype).index_select(
            0, self._flat.tree_slot_of_internal)

    def current_policy(self) -> Tensor:
        """Current strategy [A] over the tree's action slots (probabilities per infoset)."""
        return self._to_tree_order(self._strategy)

    def average_policy(self) -> Tensor:
        """Average strategy [A] over the tree's action slots (the Nash approximation)."""
        flat = self._flat
        avg = normalize_strategy(self._cumulative_strategy, flat.action_infoset,
                                 flat.num_infosets)
        return self._to_tree_order(avg)

    def cumulative_regrets(self) -> Tensor:
        """Cumulative regrets [A] in the tree's slot order (after discounting/flooring)."""
        return self._to_tree_order(self._regrets)

    def cumulative_strategy(self) -> Tensor:
        """Cumulative (weighted, normalised by ``t^g``) strategy [A] in tree slot order."""
        return self._to_tree_order(self._cumulative_strategy)

    def average_policy_values(self) -> Tensor:
        """Expected utility [P] of each player when all play the average policy."""
        return policy_values(self.tree, self.average_policy())

    def parameters(self) -> dict[str, Any]:
        """JSON-ready solver parameters (stored in checkpoints)."""
        return {"algo": self.variant.name, "alpha": self.variant.alpha,
                "beta": self.variant.beta, "gamma": self.variant.gamma,
                "alternating": self.alternating,
                "dtype": str(self.dtype).removeprefix("torch.")}

    # ------------------------------------------------------------------ state (checkpoints)
    def state_tensors(self) -> dict[str, Tensor]:
        """Solver state in the tree's slot order (CPU tensors): regrets, cumulative strategy,
        current strategy and predictions."""
        return {
            "regrets": self._to_tree_order(self._regrets).cpu(),
            "cumulative_strategy": self._to_tree_order(self._cumulative_strategy).cpu(),
            "strategy": self._to_tree_order(self._strategy).cpu(),
            "predictions": (self._to_tree_order(self._predictions).cpu()
                            if self.variant.predictive else
                            torch.zeros(self._flat.num_slots, dtype=self.dtype)),
        }

    def load_state_tensors(self, state: dict[str, Tensor], iteration: int) -> None:
        """Restore what :meth:`state_tensors` returned (and the iteration count)."""
        expected = self._flat.num_slots
        for name in ("regrets", "cumulative_strategy", "strategy", "predictions"):
            if name not in state or tuple(state[name].shape) != (expected,):
                raise TensorCFRError(f"solver state {name!r} missing or not of shape ({expected},)")
        self._regrets.copy_(self._from_tree_order(state["regrets"]))
        self._cumulative_strategy.copy_(self._from_tree_order(state["cumulative_strategy"]))
        self._strategy.copy_(self._from_tree_order(state["strategy"]))
        if self.variant.predictive:
            self._predictions.copy_(self._from_tree_order(state["predictions"]))
        if not self.__dict__.get("_node_buffers_released", False):
            self._reach.fill_(1.0)  # (the compiled passes' own reach: refresh_all)
        self.iteration = int(iteration)
        self._refresh_all()

    def save(self, path: str) -> None:
        """Write a checkpoint (see :func:`tensorcfr.core.policy_io.save_checkpoint`)."""
        save_checkpoint(self, path)

    @classmethod
    def load(cls, path: str, game: Any = None, device: torch.device | str | None = "cpu",
             max_memory_bytes: int | str | None = "auto",
             passes: str = "auto") -> "TensorCFRSolver":
        """A solver of this class restored from a checkpoint (see :func:`load_checkpoint`;
        ``game`` is the :class:`LevelTree`, or whatever this class's ``_build_tree``
        accepts)."""
        return load_checkpoint(path, game, device=device, max_memory_bytes=max_memory_bytes,
                               solver_class=cls, passes=passes)


def load_checkpoint(path: str, game: Any, device: torch.device | str | None = "cpu",
                    max_memory_bytes: int | str | None = "auto",
                    solver_class: "type[TensorCFRSolver] | None" = None,
                    cuda_graph: bool = False, passes: str = "auto") -> TensorCFRSolver:
    """Rebuild a solver from a checkpoint and restore its state (bitwise resume).

    Args:
        path: a file written by :meth:`TensorCFRSolver.save`.
        game: the :class:`LevelTree` it was computed on (game adapters' solver classes
            also accept what their ``_build_tree`` takes, e.g. an OpenSpiel game string).
        device, max_memory_bytes, cuda_graph, passes: as for :class:`TensorCFRSolver`
            (a checkpoint holds the slot-sized state only, whichever passes wrote it).
        solver_class: the solver family to build (default :class:`TensorCFRSolver`); its
            :meth:`~TensorCFRSolver.checkpoint_class` is built, since the checkpoint says
            which algorithm ran (``CFRSolver.load`` of a CFR+ checkpoint gives CFR+).

    Raises:
        CorruptFileError: unreadable or incomplete file, or a checkpoint of another game.
    """
    data = read_checkpoint(path)
    cls = (solver_class or TensorCFRSolver).checkpoint_class()
    params = data.parameters
    solver = cls(game, algo=params["algo"], alternating=params["alternating"],
                 alpha=params["alpha"], beta=params["beta"], gamma=params["gamma"],
                 device=device, dtype=params["dtype"], max_memory_bytes=max_memory_bytes,
                 cuda_graph=cuda_graph, passes=passes)
    data.check_tree(solver.tree)
    solver.load_state_tensors(data.state, data.iteration)
    return solver


class CFRSolver(TensorCFRSolver):
    """Vanilla CFR with alternating updates (OpenSpiel ``CFRSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="cfr", **kwargs)


class CFRPlusSolver(TensorCFRSolver):
    """CFR+: regret matching+, linear averaging, alternating updates (OpenSpiel ``CFRPlusSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="cfr+", **kwargs)


class LinearCFRSolver(TensorCFRSolver):
    """Linear CFR (OpenSpiel ``LCFRSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="lcfr", **kwargs)


class DCFRSolver(TensorCFRSolver):
    """Discounted CFR(alpha, beta, gamma) (OpenSpiel ``DCFRSolver``)."""

    def __init__(self, game: LevelTree, alpha: float = 1.5,
                 beta: float = 0.0, gamma: float = 2.0, **kwargs: Any) -> None:
        super().__init__(game, algo="dcfr", alpha=alpha, beta=beta, gamma=gamma, **kwargs)


class PCFRPlusSolver(TensorCFRSolver):
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021), quadratic averaging by default."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="pcfr+", **kwargs)


def policy_values(tree: LevelTree, policy: Tensor) -> Tensor:
    """Expected utility [P] of every player when all follow ``policy`` [A] (tree slot order).

    One bottom-up pass over the tree (float64 on the tree's device).
    """
    if tuple(policy.shape) != (tree.num_slots,):
        raise TensorCFRError(f"policy must have shape ({tree.num_slots},), got "
                             f"{tuple(policy.shape)}")
    dtype = torch.float64
    policy = policy.to(device=tree.device, dtype=dtype)
    values = tree.levels[-1].utility.to(dtype).t().clone()
    for d in range(tree.depth - 1, 0, -1):
        level = tree.levels[d]
        edge = torch.where(level.parent_action_slot >= 0,
                           policy[level.parent_action_slot.clamp_min(0)],
                           level.chance_prob.to(dtype))
        parent_values = tree.levels[d - 1].utility.to(dtype).t().clone()
        parent_values.index_add_(1, level.parent, values * edge)
        values = parent_values
    result = values[:, 0]
    if not bool(torch.isfinite(result).all()):  # pragma: no cover - defensive
        raise TensorCFRError("non-finite policy value")
    return result
