#!/usr/bin/env bash
# fuzz.sh — builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang into build-fuzz/ and
# runs each for FUZZ_SECONDS (default 60), one per CPU at a time; fails on any crash, leak, timeout or
# sanitizer report. With --build-only it stops after the build.
# New inputs go to build-fuzz/corpus/<name>/ (the committed seeds are only read); a crash leaves
# its input in build-fuzz/artifacts/ — copy it into tests/fuzz/corpus/<name>/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
dir=${FUZZ_BUILD_DIR:-build-fuzz}

if ! command -v clang >/dev/null 2>&1 || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  if [ "$(id -u)" != 0 ]; then
    echo "fuzz.sh: clang and libclang-rt-14-dev are needed (run as root to install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
# libFuzzer itself (Debian 12: /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a).
libfuzzer="$(clang --print-runtime-dir)/libclang_rt.fuzzer-$(uname -m).a"
if [ ! -f "$libfuzzer" ]; then
  echo "fuzz.sh: libFuzzer is missing ($libfuzzer; Debian: libclang-rt-14-dev)" >&2
  exit 1
fi

# The whole project is built by clang with coverage instrumentation (fuzzer-no-link) and the
# project's ASan + UBSan flags, so the fuzzer sees inside airlock_core and not only the target.
CC=clang cmake -S . -B "$dir" -DAIRLOCK_WERROR=ON -DAIRLOCK_SANITIZE=ON -DAIRLOCK_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_targets
# --build-only: test.sh builds the targets beside the host suite and runs them later.
[ "${1:-}" != --build-only ] || exit 0

mkdir -p "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# run_one NAME: one target for $seconds; its outcome in $dir/fuzz-NAME.ok or .failed.
run_one() {
  local name=$1 target=fuzz_$1 seeds=tests/fuzz/corpus/$1 work=$dir/corpus/$1
  mkdir -p "$work"
  rm -f "$dir/fuzz-$name.ok" "$dir/fuzz-$name.failed"
  if [ ! -d "$seeds" ]; then
    echo "fuzz.sh: $name has no seed corpus ($seeds)" >"$dir/fuzz-$name.failed"
    return
  fi
  if "$dir/fuzz/$target" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/$name-" "$work" "$seeds" >"$dir/fuzz-$name.log" 2>&1; then
    grep -E "^stat::(number_of_executed_units|new_units_added)" "$dir/fuzz-$name.log" | tr '\n' ' ' >"$dir/fuzz-$name.ok"
  else
    tail -n 60 "$dir/fuzz-$name.log" >"$dir/fuzz-$name.failed"
  fi
}
# One target per CPU at a time: each fuzzer is one process on one core.
names=()
for src in tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  names+=("${name#fuzz_}")
done
running=0
for name in "${names[@]}"; do
  echo "fuzz.sh: $name for ${seconds}s"
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
failed=()
for name in "${names[@]}"; do
  if [ -f "$dir/fuzz-$name.ok" ]; then
    echo "fuzz.sh: $name: $(cat "$dir/fuzz-$name.ok")"
  else
    cat "$dir/fuzz-$name.failed" >&2 2>/dev/null || echo "fuzz.sh: $name left no outcome" >&2
    failed+=("$name")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]} (inputs in $dir/artifacts/)" >&2
  exit 1
fi
echo "fuzz.sh: all targets ran ${seconds}s without a crash"
