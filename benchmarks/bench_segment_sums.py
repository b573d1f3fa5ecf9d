"""Segment sums three ways on one game tree (the backward pass of expected values):
per-level index_add_, per-level scatter_add_, per-level sparse CSR mat-vec.

Run: ``.venv/bin/python benchmarks/bench_segment_sums.py liars_dice``. The solver uses the
fastest one measured here (scatter_add_); see docs/generic_engine.md.
"""
import sys, time, torch
torch.set_num_threads(1)
from tensorcfr.games.openspiel import TensorCFRSolver
g = sys.argv[1]
s = TensorCFRSolver(g); s.iterate(2)
flat = s._flat; levels = s._levels; edge = s._edge_prob
util = flat.utility_by_player[0]
def index_add():
    v = util.clone()
    for d in range(len(levels)-1, 0, -1):
        (ps,pe),(st,e) = levels[d-1], levels[d]
        v[ps:pe].index_add_(0, flat.parent_local[d], v[st:e]*edge[st:e])
    return v
def scatter_add():
    v = util.clone()
    for d in range(len(levels)-1, 0, -1):
        (ps,pe),(st,e) = levels[d-1], levels[d]
        v[ps:pe].scatter_add_(0, flat.parent_local[d], v[st:e]*edge[st:e])
    return v
# CSR per level: rows = parents (level d-1), cols = children (level d); values = edge probs.
csr_struct = []
for d in range(1, len(levels)):
    (ps,pe),(st,e) = levels[d-1], levels[d]
    rows = flat.parent_local[d]
    crow = torch.zeros(pe-ps+1, dtype=torch.long); crow[1:] = torch.bincount(rows, minlength=pe-ps).cumsum(0)
    csr_struct.append((crow, torch.arange(e-st), (pe-ps, e-st)))
def sparse():
    v = util.clone()
    for d in range(len(levels)-1, 0, -1):
        (ps,pe),(st,e) = levels[d-1], levels[d]
        crow, col, shape = csr_struct[d-1]
        m = torch.sparse_csr_tensor(crow, col, edge[st:e], shape)
        v[ps:pe] += (m @ v[st:e].unsqueeze(1)).squeeze(1)
    return v
ref = index_add()
assert torch.allclose(sparse(), ref) and torch.allclose(scatter_add(), ref)
n = 20 if flat.num_nodes > 100000 else 200
res = {}
for rep in range(3):
    for name, f in [("index_add_", index_add), ("scatter_add_", scatter_add), ("sparse_csr_mv", sparse)]:
        t = time.perf_counter()
        for _ in range(n): f()
        res.setdefault(name, []).append((time.perf_counter()-t)/n*1e3)
print(g, flat.num_nodes, "nodes, threads", torch.get_num_threads(), {k: f"{min(v):.3f} ms" for k,v in res.items()})
