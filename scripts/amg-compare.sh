#!/usr/bin/env bash
# parloop's AMG-CG beside PyAMG's smoothed aggregation on the same systems: the Poisson
# example assembles the P1 Laplacian of a jittered unit square (interior vertices moved by up
# to 0.2 of a square's side; Dirichlet rows and columns zeroed) on
# the device, solves it by AMG-CG and by Jacobi-CG to a relative residual of 1e-8 in f64, and
# exports A and b; PyAMG (its defaults) then preconditions SciPy's CG on the same system.
# PyAMG and SciPy are installed with pip into a virtual environment (not dependencies).
# Usage: scripts/amg-compare.sh [SIZES] [JACOBI_SIZES]  (squares per side; default 100,316
# and 100,316: Jacobi-CG at 10^6 unknowns takes minutes on a CPU adapter). CUBE=1: tetrahedra
# of the unit cube instead (cubes per side, jittered by up to 0.1 of a side), e.g.
# `CUBE=1 scripts/amg-compare.sh 21,46 21,46`.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-100,316}
jacobi=${2:-100,316}
venv=${PYAMG_VENV:-${TMPDIR:-/tmp}/parloop-pyamg-venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check scipy pyamg
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cargo build --quiet --release --example poisson
if [ "${CUBE:-0}" = 1 ]; then mesh=(--cube --jitter 0.1); else mesh=(--jitter 0.2); fi
run() {
    target/release/examples/poisson --precision f64 --rtol 1e-8 "${mesh[@]}" \
        --output "$dir/out" "$@"
}
for n in ${sizes//,/ }; do
    echo "## n = $n, AMG-CG (residual read every iteration)"
    run --n "$n" --pc amg --check-every 1 --export "$dir/n$n" | grep -E "CG|AMG|cells"
done
for n in ${jacobi//,/ }; do
    echo "## n = $n, Jacobi-CG"
    run --n "$n" --pc jacobi | grep -E "CG|cells"
done
"$venv/bin/python" - "$dir" <<'PY'
import glob, sys, time
import numpy as np, pyamg, scipy
from scipy.io import mmread
from scipy.sparse.linalg import cg
print(f"PyAMG {pyamg.__version__}, SciPy {scipy.__version__}")
print("| unknowns | PyAMG SA-CG iterations | levels | operator complexity | setup s | solve s |")
print("|---:|---:|---:|---:|---:|---:|")
for d in sorted(glob.glob(sys.argv[1] + "/n*"), key=lambda p: int(p.split("/n")[-1])):
    a = mmread(d + "/A.mtx").tocsr()
    b = np.loadtxt(d + "/b.txt")
    t = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(a)
    setup = time.perf_counter() - t
    its = [0]
    def count(_):
        its[0] += 1
    t = time.perf_counter()
    x, info = cg(a, b, rtol=1e-8, maxiter=1000, M=ml.aspreconditioner(), callback=count)
    solve = time.perf_counter() - t
    assert info == 0, f"{d}: PyAMG-CG did not converge"
    print(f"| {a.shape[0]} | {its[0]} | {len(ml.levels)} | {ml.operator_complexity():.3f} | {setup:.2f} | {solve:.2f} |")
PY
