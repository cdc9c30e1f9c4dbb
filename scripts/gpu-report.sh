#!/usr/bin/env bash
# The GPU report of BENCHMARKS.md on a machine with a GPU and no Rust toolchain, in one call of
# at most DEADLINE seconds (default 520): what does not fit is skipped, most important first.
# Prepared beforehand by scripts/gpu-bundle.sh (release binaries in .bench/, the Vulkan loader in
# .gl/) and, for OP2's Airfoil beside parloop's, `scripts/op2-airfoil.sh generate` on a checkout
# of OP2-Common in .op2/OP2-Common. Every result goes to $OUT (default: ./gpu-out):
#
#   info.txt       the adapter as wgpu and nvidia-smi see it
#   rms-*.txt      Airfoil's rms history in each precision (no timestamps: the wall time alone)
#   airfoil.txt    Airfoil under every strategy, AoS and SoA, workgroup sizes, tune from an
#                  empty cache, eager and unfused: dispatches, submissions, per-group GPU time
#   op2-*.txt      OP2's Airfoil, CUDA and OpenMP, built here from the checkout, same mesh
#   cg.md, bench.md  `parloop bench`: CG at 10^6 and 10^7 unknowns, then the full report
#
# PARTS chooses what runs (default: all of "rms op2 cg strategies bench"); BENCH_SECTIONS the
# sections of the last.
set -uo pipefail
parts=" ${PARTS:-rms op2 cg strategies bench} "
want() { [[ $parts == *" $1 "* ]]; }
out=${OUT:-gpu-out}
mkdir -p "$out"
b=.bench
start=$SECONDS
deadline=${DEADLINE:-520}
left() { echo $((deadline - (SECONDS - start))); }
if ! ldconfig -p | grep -q libvulkan; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if ! "$b/parloop" info > "$out/info.txt" 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    "$b/parloop" info > "$out/info.txt" 2>&1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
    >> "$out/info.txt" 2>&1
grid=/tmp/new_grid.dat
# A smaller mesh and fewer iterations for a trial run on a software adapter.
size=${AIRFOIL_SIZE:-400,600}
iters=${AIRFOIL_ITERATIONS:-1000}
cg_n=${CG_N:-1000 3162}
# f32 cannot reach the CG section's rtol of 1e-8 at these sizes (its true residual stays far
# above): f64 only unless CG_TYPES says otherwise.
cg_types=${CG_TYPES:-f64}

# One Airfoil run: its label, then the example's own flags; the summary lines and the kernel
# table go to airfoil.txt.
af() {
    local label=$1
    shift
    if [ "$(left)" -lt 60 ]; then
        echo "### $label: skipped (out of time)" >> "$out/airfoil.txt"
        return
    fi
    echo "### $label" >> "$out/airfoil.txt"
    timeout 60 "$b/airfoil" --mesh "$grid" --iterations "$iters" "$@" 2>&1 |
        grep -v '^ *[0-9]*00  ' >> "$out/airfoil.txt"
    echo >> "$out/airfoil.txt"
}

# OP2 builds on the CPU while the GPU runs parloop.
if want op2 && [ -d .op2/OP2-Common ]; then
    (nice scripts/op2-airfoil.sh build .op2/OP2-Common > "$out/op2-build.txt" 2>&1) &
fi
"$b/airfoil" --size "$size" --iterations 1 --write-mesh "$grid" > /dev/null
# The rms history of each precision, printed every 100 iterations as OP2 does.
for p in f32 f64; do
    want rms || break
    timeout 60 "$b/airfoil" --mesh "$grid" --iterations "$iters" --precision $p --no-profile \
        > "$out/rms-$p.txt" 2>&1
    af "$p auto" --precision $p
done
wait
if want op2 && [ -x .op2/OP2-Common/apps/c/airfoil/airfoil_plain/dp/airfoil_openmp ]; then
    timeout 120 scripts/op2-airfoil.sh run .op2/OP2-Common "$grid" > "$out/op2-run.txt" 2>&1
fi
for n in $cg_n; do
    want cg && [ "$(left)" -gt 60 ] && timeout $(($(left) - 30)) "$b/parloop" bench --size full \
        --sections solver --solver-n "$n" --solver-types "$cg_types" >> "$out/cg.md" 2>&1
done
for p in f32 f64; do
    want strategies || break
    # f64 increments through a map under atomics, cas and staged are compare-and-swap
    # loops on 64-bit atomics; `parloop info` says whether the card has them (a refusal
    # otherwise, in the file).
    strategies="auto hierarchical global-colour atomics cas staged"
    for s in $strategies; do
        for soa in 0 1; do
            [ "$s$soa" = auto0 ] && continue
            PARLOOP_SOA=$soa af "$p $s soa=$soa" --precision $p --strategy $s
        done
    done
    for wg in 64 128 256; do
        PARLOOP_WORKGROUP_SIZE=$wg af "$p auto workgroup=$wg" --precision $p
    done
    PARLOOP_TUNE_CACHE=/tmp/tune-$p.json af "$p tune (empty cache)" --precision $p \
        --strategy tune
    PARLOOP_TUNE_CACHE=/tmp/tune-$p.json af "$p tune (its cache)" --precision $p \
        --strategy tune
    af "$p auto eager" --precision $p --mode eager
    af "$p auto no-fusion" --precision $p --no-fusion
done
if want bench && [ "$(left)" -gt 40 ]; then
    timeout $(($(left) - 10)) "$b/parloop" bench --size full --sections \
        "${BENCH_SECTIONS:-triangles,res_calc,wave_strategies,layouts,modes,wave,airfoil,vectors,contention}" \
        > "$out/bench.md" 2>&1
fi
echo "done in $((SECONDS - start)) s" >> "$out/info.txt"
ls -l "$out"
