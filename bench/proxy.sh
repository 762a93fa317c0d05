#!/usr/bin/env bash
# proxy.sh — the issue-4 benchmark: an HTTPS download through the egress proxy against the
# same download over a direct loopback connection, both from inside an airlock sandbox; and (issue
# 36) through the capture: curl --noproxy, the name from the sandbox's own resolver; and with the
# TLS terminated at airlock (a request rule on the host), against the passthrough tunnel.
#
# Direct: `--net host`, curl connects to the server on the host's 127.0.0.1. Proxied:
# `--net allow=bench.test:PORT` with --allow-private 127.0.0.1/32 and a hosts file, curl goes
# through CONNECT on the sandbox's 127.0.0.1:3128 and the supervisor relays. Same server,
# same file, same TLS; the difference is the proxy. Not a test: prints a table.
# Usage: bench/proxy.sh  (AIRLOCK=..., SIZE_MB=256, RUNS=5)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
find_airlock
size_mb=${SIZE_MB:-256}
runs=${RUNS:-5}
need curl openssl python3
bench_tls_dir
head -c "$((size_mb * 1024 * 1024))" /dev/zero >"$dir/blob"
chmod 0644 "$dir/blob"
# openssl s_server -WWW serves files relative to its working directory, one connection at a time.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$dir" && exec openssl s_server -quiet -WWW -accept "127.0.0.1:$port" -cert cert.pem -key key.pem) &
srv=$!
sleep 0.5

fetch() { # MODE -> seconds of the download as curl measures it
	local net=(--net host) url="https://bench.test:$port/blob" how=(--resolve "bench.test:$port:127.0.0.1")
	if [[ $1 != direct ]]; then
		net=(--net "allow=bench.test:$port" --allow-private 127.0.0.1/32 --proxy-hosts "$dir/hosts")
	fi
	# The capture: no proxy, and the name resolved in the sandbox (airlock's resolver).
	[[ $1 != capture ]] || how=(--noproxy '*')
	local ca=(--cacert /etc/bench.pem)
	# Terminated (issue 36, docs/tls.md): a request rule makes airlock end the TLS with the
	# sandbox's CA (which the job's bundle names) and verify the upstream itself.
	if [[ $1 == terminated ]]; then
		net=(--net "allow=GET bench.test:$port/" --allow-private 127.0.0.1/32 --proxy-hosts "$dir/hosts"
			--upstream-ca "$dir/cert.pem")
		ca=()
	fi
	"$airlock" run --time 120s --cpus none "${net[@]}" --ro "$dir/cert.pem:/etc/bench.pem" -- \
		curl -sS "${how[@]}" "${ca[@]}" -o /dev/null \
		-w '%{time_total} %{time_connect} %{time_appconnect}\n' "$url"
}

declare -A best
for mode in direct proxy capture terminated; do
	best[$mode]=999999
	for _ in $(seq "$runs"); do
		read -r total _ app < <(fetch "$mode")
		best[$mode]=$(python3 -c "print(min($total, ${best[$mode]}))")
		best[${mode}_app]=$app
	done
done
python3 - "$size_mb" "${best[direct]}" "${best[proxy]}" "${best[direct_app]}" "${best[proxy_app]}" \
	"${best[capture]}" "${best[capture_app]}" "${best[terminated]}" "${best[terminated_app]}" <<'EOF'
import sys
mb, d, p, da, pa, c, ca, t, ta = int(sys.argv[1]), *map(float, sys.argv[2:])
print("| path | best of runs: MiB/s | time to TLS established (ms) |")
print("|---|---|---|")
print("| direct (--net host) | %.0f | %.2f |" % (mb / d, da * 1000))
print("| through the proxy (--net allow=) | %.0f | %.2f |" % (mb / p, pa * 1000))
print("| through the capture (--net allow=, curl --noproxy) | %.0f | %.2f |" % (mb / c, ca * 1000))
print("| terminated at airlock (a request rule: TLS ends at airlock) | %.0f | %.2f |" % (mb / t, ta * 1000))
print()
print("throughput terminated: %.1f%% of direct; added set-up latency %.2f ms" % (100 * d / t, (ta - da) * 1000))
print("throughput through the proxy: %.1f%% of direct; added set-up latency %.2f ms" % (100 * d / p, (pa - da) * 1000))
print("throughput through the capture: %.1f%% of direct; added set-up latency %.2f ms" % (100 * d / c, (ca - da) * 1000))
EOF
