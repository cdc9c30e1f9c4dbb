#!/usr/bin/env bash
# SciPy's conjugate gradients beside parloop's (issue 26): benches/linalg.rs assembles the P1
# Laplacian (jittered unit square, Dirichlet rows) on the device, solves it by Jacobi-CG to a
# relative residual of 1e-8 and exports each f64 matrix and b; then scipy.sparse.linalg.cg
# solves the same system with the same preconditioner and tolerance on this machine's CPU.
# SciPy is installed with pip into a virtual environment (not a dependency of the crate).
# Usage: scripts/scipy-cg.sh [SIZES]   (squares per side, default 100,316)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-100,316}
venv=${SCIPY_VENV:-${TMPDIR:-/tmp}/parloop-scipy-venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check scipy
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
LINALG_SIZES="$sizes" LINALG_TYPES=f64 LINALG_EXPORT="$dir" cargo bench --quiet --bench linalg
if ! ls "$dir"/*.mtx > /dev/null 2>&1; then
    echo "no matrix exported: the adapter has no f64 (the comparison runs in f64)" >&2
    exit 1
fi
"$venv/bin/python" - "$dir" <<'PY'
import glob, sys, time
import numpy as np
import scipy
from scipy.io import mmread
from scipy.sparse.linalg import LinearOperator, cg

print(f"SciPy {scipy.__version__}, NumPy {np.__version__}")
print("| unknowns | entries | SciPy CG iterations | SciPy ms | ms/iteration | y = A x ms |")
print("|---:|---:|---:|---:|---:|---:|")
for path in sorted(glob.glob(sys.argv[1] + "/*.mtx"), key=lambda p: int(p.split("_")[-2])):
    a = mmread(path).tocsr()
    b = np.loadtxt(path[:-4] + ".b")
    d = a.diagonal()
    m = LinearOperator(a.shape, matvec=lambda r: r / d)
    its = [0]
    def count(_):
        its[0] += 1
    t = time.perf_counter()
    x, info = cg(a, b, rtol=1e-8, maxiter=50000, M=m, callback=count)
    ms = (time.perf_counter() - t) * 1e3
    assert info == 0, f"{path}: SciPy's cg did not converge (info {info})"
    rel = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
    reps = 20
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    spmv = (time.perf_counter() - t) * 1e3 / reps
    print(f"| {a.shape[0]} | {a.nnz} | {its[0]} | {ms:.0f} | {ms / its[0]:.3f} | {spmv:.3f} | (true residual {rel:.1e})")
PY
