#!/usr/bin/env bash
# The browser demo's headless tests: builds the wasm, computes the native checksum of the same
# run, then has Chromium (WebGPU on SwiftShader) run the page and compare; then drives the
# interactive page as a user would (web/test/user.mjs). Extra arguments go to
# web/test/run.mjs (e.g. --bench-n 100,200 for the steps/s figures and the screenshot).
set -euo pipefail
cd "$(dirname "$0")/.."
web/build.sh
n=20
steps=200
expected=$(cargo run --example wave -- --n "$n" --steps "$steps" --every 0 \
    --steps-per-force 10 --checksum | sed -n 's/^checksum: //p')
echo "native checksum after $steps steps on ${n}x${n}: $expected"
if [ ! -d web/test/node_modules/playwright-core ] || [ ! -d web/test/node_modules/pngjs ]; then
    (cd web/test && npm ci --no-audit --no-fund)
fi
node web/test/run.mjs --expected "$expected" --n "$n" --steps "$steps" "$@"
# The page as a user drives it: the presented canvas, clicks, Pause, Reset, every mesh size.
node web/test/user.mjs
