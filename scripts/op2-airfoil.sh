#!/usr/bin/env bash
# OP2's own Airfoil, built from a checkout of the public OP2-Common repository kept outside this
# repository, to run beside parloop's on the same machine and mesh (BENCHMARKS.md, H100 report).
#
#   scripts/op2-airfoil.sh generate OP2_DIR   # OP2's code generator writes the CUDA/OpenMP loops
#   scripts/op2-airfoil.sh build OP2_DIR      # OP2's libraries and Airfoil: OpenMP, and CUDA
#                                             # where nvcc is found (CUDA_GEN, default 90: Hopper)
#   scripts/op2-airfoil.sh run OP2_DIR GRID   # every variant built, double and single precision,
#                                             # 1000 iterations on GRID (an OP2 new_grid.dat),
#                                             # the total time, then again per kernel
#                                             # (OP2_VARIANTS: default "cuda openmp")
#
# OP2_DIR must be a git checkout (the generator asks git for its version). `generate` needs
# Python 3 with jinja2, fparser, pcpp, sympy and libclang==18.1.1 (OP2's translator-v2
# requirements); it can run on another machine than `build` and `run`, which need only make,
# g++ and nvcc. parloop's `airfoil --write-mesh new_grid.dat` writes the standard grid.
set -euo pipefail
step=${1:?usage: op2-airfoil.sh generate|build|run OP2_DIR [GRID]}
op2=$(realpath "${2:?the OP2-Common checkout}")
apps="$op2/apps/c/airfoil/airfoil_plain"

case "$step" in
generate)
    # libclang's Python bindings of 18.1.1 leave clang_Cursor_Evaluate's result type as C int,
    # which truncates the pointer the translator passes back (a crash on x86-64): set the types
    # before running the translator unchanged.
    cat > /tmp/op2-translate.py <<'EOF'
import ctypes, runpy, sys
import clang.cindex as ci
lib = ci.conf.lib
lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
lib.clang_EvalResult_getAsInt.argtypes = [ctypes.c_void_p]
lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0])
runpy.run_path(sys.argv[0], run_name="__main__")
EOF
    for p in dp sp; do
        (cd "$apps/$p" && mkdir -p generated/airfoil &&
            PATH="$op2/translator-v2/fpp:$PATH" python3 /tmp/op2-translate.py \
                "$op2/translator-v2/op2-translator" -I. -I"$op2/op2/include" airfoil.cpp \
                -o generated/airfoil | grep -v '^airfoil.cpp:')
    done
    ls "$apps"/*/generated/airfoil
    ;;
build)
    jobs=$(nproc)
    variants=(airfoil_openmp)
    libs=(openmp)
    cuda=()
    if command -v nvcc > /dev/null; then
        cuda=(OP2_C_CUDA_COMPILER=nvhpc "CUDA_GEN=${CUDA_GEN:-90}"
            "CUDA_INSTALL_PATH=$(dirname "$(dirname "$(command -v nvcc)")")")
        variants+=(airfoil_cuda)
        libs+=(cuda)
    fi
    make -C "$op2/op2" OP2_C_COMPILER=gnu "${cuda[@]}" config > "$op2/config.log"
    make -C "$op2/op2" -j"$jobs" "${libs[@]}" > "$op2/build.log"
    for p in dp sp; do
        # The generated sources are up to date: keep make from running the generator again.
        touch "$apps/$p/generated/airfoil"
        make -C "$apps/$p" -j"$jobs" "${variants[@]}" >> "$op2/build.log"
    done
    ls -l "$apps"/*/airfoil_{openmp,cuda} 2> /dev/null || true
    ;;
run)
    grid=$(realpath "${3:?the mesh (new_grid.dat)}")
    for p in dp sp; do
        for v in ${OP2_VARIANTS:-cuda openmp}; do
            exe="$apps/$p/airfoil_$v"
            [ -x "$exe" ] || continue
            dir=$(mktemp -d)
            ln -s "$grid" "$dir/new_grid.dat"
            threads=${OMP_NUM_THREADS:-$(nproc)}
            # First the whole run's time alone, then each kernel's (OP2 synchronises the device
            # around each kernel to time it).
            for level in 1 2; do
                echo "## OP2 airfoil_$v, $p, OP_PROFILE_LEVEL=$level (OMP_NUM_THREADS=$threads)"
                (cd "$dir" && OMP_NUM_THREADS=$threads OP_PROFILE_LEVEL=$level "$exe")
            done
            rm -rf "$dir"
        done
    done
    ;;
*)
    echo "op2-airfoil.sh: unknown step $step (generate, build or run)" >&2
    exit 2
    ;;
esac
