#!/usr/bin/env bash
# Builds the browser demo into web/pkg: the wasm32 target and the wasm-bindgen CLI at the
# version Cargo.lock pins are installed only when missing. Serve with:
#   python3 -m http.server -b 127.0.0.1 -d web 8000   (then open http://127.0.0.1:8000)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -qF "$version"; then
    echo "installing wasm-bindgen-cli $version (once; a few minutes)" >&2
    cargo install wasm-bindgen-cli --version "$version"
fi
cargo build -p parloop-web --target wasm32-unknown-unknown --profile web
# Wherever Cargo puts its output (CARGO_TARGET_DIR, build.target-dir), not ./target.
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
# The function-name section (a sixth of the file) only names frames in stack traces.
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir web/pkg \
    "$target_dir/wasm32-unknown-unknown/web/parloop_web.wasm"
wasm=web/pkg/parloop_web_bg.wasm
echo "web/pkg/parloop_web_bg.wasm: $(wc -c < "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
