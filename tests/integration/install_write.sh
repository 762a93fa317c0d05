#!/usr/bin/env bash
# install_write.sh — the README's example in the write profile: `pip install -r requirements.txt`
# and `npm install` in a checkout work on Debian's externally managed Python, and the next step of
# the same job imports what they installed. The registries are served over HTTPS in a network
# namespace this test makes, named pypi.org, files.pythonhosted.org and registry.npmjs.org for
# airlock only (a private mount namespace with its own /etc/hosts). Then, with no route at all (a
# network namespace of the test's with nothing in it), both installs fail within seconds and
# their own output names the cause. Nothing leaves the host.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making a network namespace and a private /etc/hosts needs root"
for t in ip openssl unshare pip3 npm; do command -v "$t" >/dev/null || al_fail "$t is missing (scripts/deps.sh)"; done
dir=$(al_mcp_dir registry.py)
m=$(al_marker)
"$AL_PY" "$AL_SRC/tests/mcp/mkwheel.py" "$m" "$dir/airlock_demo-1.0-py3-none-any.whl"
al_test_certs "$dir" pypi.org files.pythonhosted.org registry.npmjs.org
chmod 0644 "$dir"/*

net="10.215.$((RANDOM % 250)).0"
al_netns_host "$net"
al_bg ip netns exec "$AL_NS" "$AL_PY" "$dir/registry.py" "$dir" "$AL_NS_ADDR" "$m"
for _ in $(seq 100); do [ -s "$dir/registry.ready" ] && break; sleep 0.05; done
[ -s "$dir/registry.ready" ] || al_fail "the registry did not start"
printf '127.0.0.1 localhost\n%s pypi.org files.pythonhosted.org registry.npmjs.org\n' "$AL_NS_ADDR" >"$dir/hosts"
confdir=$(al_tmpdir 0755)
printf 'version: 1\nnetwork:\n  allow-private: [%s/30]\n' "$net" >"$confdir/c.yaml"

# The project: what the README's user has. The test CA is trusted through the job's own --env.
proj=$(al_tmpdir 0755)
printf 'airlock-demo\n' >"$proj/requirements.txt"
printf '{"name": "proj", "version": "1.0.0", "dependencies": {"airlock-demo": "1.0.0"}}\n' >"$proj/package.json"
cp "$dir/ca.pem" "$proj/ca.pem"
chmod 0644 "$dir/hosts" "$confdir/c.yaml" "$proj"/*

# write [airlock exec options...] -- CODE: the write profile's exec of a shell job on the checkout.
write() {
	al_split_args "$@"
	al_run --config "$confdir/c.yaml" exec --profile untrusted-code-write --checkout "$proj" "${AL_OPTS[@]}" \
		-e PIP_CERT=/workspace/src/ca.pem -e npm_config_cafile=/workspace/src/ca.pem --time 120s \
		--lang shell -c "cd /workspace/src && ${AL_ARGV[*]}"
}
# airlock (and so its proxy's resolver) sees the test's hosts file in a mount namespace of its own;
# the mode's user (setpriv) comes after the namespaces, which root makes.
sp=("${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN")
wrapper="$AL_TEST_ROOT/in-hosts"
printf '#!/bin/sh\nexec unshare -m sh -c '\''mount --bind "$0" /etc/hosts && exec "$@"'\'' %q %s "$@"\n' \
	"$dir/hosts" "$(printf '%q ' "${sp[@]}")" >"$wrapper"
nonet="$AL_TEST_ROOT/no-net"
printf '#!/bin/sh\nexec unshare -n %s "$@"\n' "$(printf '%q ' "${sp[@]}")" >"$nonet"
chmod 0755 "$wrapper" "$nonet"
AL_SETPRIV=()
AL_AIRLOCK_BIN=$wrapper

write -- 'pip install -r requirements.txt && python3 -c "import airlock_demo; print(airlock_demo.MARK)"'
al_assert_rc 0
al_assert_eq "$(printf '%s\n' "$AL_OUT" | tail -n 1)" "$m" "a later step imports what pip installed"
al_assert_not_contains "$AL_ERR$AL_OUT" "externally-managed-environment" "pip's output"
grep -q "files.pythonhosted.org /packages/airlock_demo-1.0" "$dir/registry.log" || al_fail "the wheel was not fetched"
write -- 'npm install && node -e "console.log(require(\"airlock-demo\").MARK)"'
al_assert_rc 0
al_assert_eq "$(printf '%s\n' "$AL_OUT" | tail -n 1)" "$m" "a later step requires what npm installed"
# A virtual environment in the workspace works too (the override changes nothing there).
write -- 'python3 -m venv --without-pip /tmp/v && pip --python /tmp/v/bin/python install -q -r requirements.txt && /tmp/v/bin/python -c "import airlock_demo; print(airlock_demo.MARK)"'
al_assert_rc 0
al_assert_eq "$(printf '%s\n' "$AL_OUT" | tail -n 1)" "$m" "what pip installed into a virtual environment"
al_pass "pip and npm install in the write profile; the next step imports them"

# No route at all: a network namespace with nothing in it, so the proxy cannot even resolve.
AL_AIRLOCK_BIN=$nonet
for cmd in 'pip install -r requirements.txt' 'npm install'; do
	t0=$(date +%s%N)
	write -- "$cmd"
	took=$((($(date +%s%N) - t0) / 1000000))
	[ "$AL_RC" != 0 ] || al_fail "'$cmd' succeeded with no route"
	[ "$took" -lt 10000 ] || al_fail "'$cmd' took $took ms to fail with no route (retries)"
	al_assert_contains "$AL_ERR$AL_OUT" "airlock: name resolution failed" "what '$cmd' prints"
	al_pass "'$cmd' with no route: fails in $took ms naming the cause"
done
al_netns_host_del
