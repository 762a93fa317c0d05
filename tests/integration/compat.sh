#!/bin/bash
# compat.sh — with every layer on (seccomp default profile, Landlock, cgroups), real interpreters
# and a compiler give the same output inside as outside: numpy, node worker_threads and
# child_process, multiprocessing, gcc compile-and-run, ruby and php.
. "$(dirname "$0")/../lib.sh"

src=$(al_tmpdir 0755)

# same NAME FILE CMD...: CMD (with FILE from $src, seen inside at /src) prints the same inside and out.
same() {
	local what=$1 expected rc=0
	shift
	expected=$(cd "$src" && SRC="$src" "$@" 2>&1) || rc=$?
	[ "$rc" = 0 ] && [ -n "$expected" ] || al_fail "control: '$what' fails on the host (rc $rc): $expected"
	local inside=()
	for a in "$@"; do inside+=("${a//$src//src}"); done
	al_run run --ro "$src:/src" --require seccomp -e SRC=/src -- "${inside[@]}"
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "$expected" "$what inside"
}

cat >"$src/np.py" <<'PY'
import numpy as np
a = np.arange(1, 10, dtype=np.float64).reshape(3, 3)
print(a @ a.T)
print(np.linalg.inv(a + np.eye(3)).round(6).sum())
PY
same "numpy matrix product" /usr/bin/python3 "$src/np.py"

cat >"$src/mp.py" <<'PY'
import multiprocessing as mp, subprocess, tempfile, os
def sq(x): return x * x
if __name__ == "__main__":
    with mp.Pool(2) as p:
        print(p.map(sq, range(8)))
    print(subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout.strip())
    with tempfile.NamedTemporaryFile() as f:
        print(os.path.exists(f.name))
PY
same "python multiprocessing + subprocess" /usr/bin/python3 "$src/mp.py"

cat >"$src/w.js" <<'JS'
const { Worker } = require("worker_threads");
const { execFileSync } = require("child_process");
const w = new Worker("const {parentPort}=require('worker_threads'); parentPort.postMessage(6*7)", { eval: true });
w.on("message", (m) => {
  console.log("worker", m);
  console.log("child", execFileSync("/bin/echo", ["hi"]).toString().trim());
});
JS
same "node worker_threads + child_process" /usr/bin/node "$src/w.js"

cat >"$src/hello.c" <<'C'
#include <stdio.h>
#include <math.h>
int main(void) { printf("%.3f %d\n", sqrt(2.0), (int)sizeof(long)); return 0; }
C
same "gcc compile and run" /bin/sh -c 'gcc -O2 -o "${TMPDIR:-/tmp}/hello.$$" "$SRC/hello.c" -lm && "${TMPDIR:-/tmp}/hello.$$"; r=$?; rm -f "${TMPDIR:-/tmp}/hello.$$"; exit $r'

for lang in ruby php; do
	command -v "$lang" >/dev/null || al_fail "$lang is not installed (scripts/deps.sh installs it)"
done
same "ruby" /usr/bin/ruby -e 'require "json"; puts JSON.generate({a: [1, 2].map { |x| x * 3 }}); puts (1..10).sum'
same "php" /usr/bin/php -r 'echo json_encode(["a" => array_map(fn($x) => $x * 3, [1, 2])]), "\n", array_sum(range(1, 10)), "\n";'
