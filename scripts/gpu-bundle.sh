#!/usr/bin/env bash
# Prepares a run of `parloop bench` on a machine that has a GPU and a Vulkan driver but no Rust
# toolchain (issue 18): builds the release binaries here, strips them into .bench/, and fetches
# the Vulkan loader (with GL/EGL) as Debian packages into .gl/ for a machine that lacks it.
# Both folders are ignored by git. Then, on the GPU machine, from the repository root:
#
#   for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig   # only where `ldconfig -p | grep libvulkan` is empty
#   .bench/parloop info
#   .bench/parloop bench --size full > report.md            # every table, printed as it is measured
#   .bench/airfoil --precision f64                          # OP2's double precision, 1000 iterations
#
# (VK_DRIVER_FILES may need to name the vendor's ICD, e.g. /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin parloop --example airfoil --example wave
mkdir -p .bench
cp target/release/parloop target/release/examples/airfoil target/release/examples/wave .bench/
strip .bench/parloop .bench/airfoil .bench/wave
if ! ls .gl/libvulkan1_*.deb > /dev/null 2>&1; then
    mkdir -p .gl /tmp/amd64/partial
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    # shellcheck disable=SC2086
    apt-get $o update -qq
    # shellcheck disable=SC2086
    (cd .gl && apt-get $o download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .bench .gl
