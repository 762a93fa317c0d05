#!/usr/bin/env bash
# pause.sh — pausing a sandbox in place and resuming it (issue 32): through the library (bench/pause.c,
# an idle held sandbox, then one running a CPU burner) and over airlock serve's JSON API (POST
# …/pause and …/resume on one kept-alive connection, as a client makes them), medians of ROUNDS.
# Usage: bench/pause.sh [ROUNDS]   (BUILD_DIR defaults to build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need gcc pkg-config python3
build=${BUILD_DIR:-build}
[ -f "$build/src/libairlock_core.a" ] && [ -x "$build/airlock-serve" ] || die "build airlock first (scripts/build.sh)"
airlock=$(realpath "$build/airlock")
n=${1:-200}
tmp=$(mktemp -d)
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
gcc -O2 -Iinclude -Wl,-z,relro,-z,now bench/pause.c -o "$tmp/pause" "$build/src/libairlock_core.a" \
	$(pkg-config --libs jansson libseccomp yaml-0.1 openssl libpcre2-8 libarchive) -lpthread -lm
printf 'direct: '
"$tmp/pause" "$n"

serve_config_head >"$tmp/cfg.yaml"
chmod 0600 "$tmp/cfg.yaml"
bench_serve_start "$tmp/s" --config "$tmp/cfg.yaml" --socket none --token-file "$tmp/token" --audit "$tmp/a.jsonl" \
	--state-dir none
printf 'http:   '
python3 - "$port" "$(awk '{print $NF}' "$tmp/token")" "$n" <<'PY'
import http.client, json, statistics, sys, time
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
def call(method, path, body=None):
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    if r.status not in (200, 201):
        sys.exit(f"{method} {path}: {r.status} {data!r}")
    return json.loads(data) if data else {}
sb = call("POST", "/v1/sandboxes", "{}")["sandbox_id"]
def rounds(label):
    p, r, inner = [], [], []
    for _ in range(n):
        t0 = time.perf_counter(); got = call("POST", f"/v1/sandboxes/{sb}/pause"); t1 = time.perf_counter()
        inner.append(got["took_ms"]); time.sleep(0.002)
        t2 = time.perf_counter(); call("POST", f"/v1/sandboxes/{sb}/resume"); r.append((time.perf_counter() - t2) * 1e3)
        p.append((t1 - t0) * 1e3); time.sleep(0.002)
    return {"pause_ms": round(statistics.median(p), 3), "resume_ms": round(statistics.median(r), 3),
            "pause_in_server_ms": round(statistics.median(inner), 3)}
idle = rounds("idle")
call("POST", f"/v1/sandboxes/{sb}/exec", json.dumps({"command": "while :; do :; done", "background": True}))
time.sleep(0.1)
busy = rounds("burning")
call("DELETE", f"/v1/sandboxes/{sb}")
print(json.dumps({"rounds": n, "idle": idle, "burning": busy}))
PY
bench_serve_stop
