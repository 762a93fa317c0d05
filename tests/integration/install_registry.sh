#!/usr/bin/env bash
# install_registry.sh — code_install_package end to end (tests/mcp/install.py): a registry over HTTPS
# in a network namespace this test makes, named pypi.org and files.pythonhosted.org for airlock
# only (a private mount namespace with its own /etc/hosts) and allowed as a private address by the
# configuration; pip installs into the MCP session's own sandbox through the egress proxy and a
# later code_execute imports the package. The host is made as root in both modes; airlock runs as
# the mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making a network namespace and a private /etc/hosts needs root"
for t in ip openssl unshare; do command -v "$t" >/dev/null || al_skip "$t is missing"; done
dir=$(al_tmpdir)
chmod 0777 "$dir" # the audit log is written by the mode's user
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/install.py" "$AL_SRC/tests/mcp/registry.py" "$dir/"
m=$(al_marker)
"$AL_PY" "$AL_SRC/tests/mcp/mkwheel.py" "$m" "$dir/airlock_demo-1.0-py3-none-any.whl"

# The registry's certificate, for both names, signed by a test CA only the sandbox's pip trusts.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=airlock-test-ca -keyout "$dir/ca.key" \
	-out "$dir/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=pypi.org -keyout "$dir/srv.key" -out "$dir/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:pypi.org,DNS:files.pythonhosted.org\n' >"$dir/ext"
openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
	-extfile "$dir/ext" -out "$dir/srv.pem" 2>/dev/null
chmod 0644 "$dir"/*

# The registry's host: a veth pair into a namespace of our own, on a /30 of a private range.
ns="al$m"
hv="${ns:0:11}r"
net="10.214.$((RANDOM % 250)).0"
cleanup_ns() { ip link del "$hv" 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; }
trap 'cleanup_ns; al_inner_cleanup' EXIT
ip netns add "$ns"
ip link add "$hv" type veth peer name eth0 netns "$ns"
ip addr add "${net%.0}.1/30" dev "$hv"
ip link set "$hv" up
ip -n "$ns" addr add "${net%.0}.2/30" dev eth0
ip -n "$ns" link set eth0 up
ip -n "$ns" link set lo up
al_bg ip netns exec "$ns" "$AL_PY" "$dir/registry.py" "$dir" "${net%.0}.2"
for _ in $(seq 100); do [ -s "$dir/registry.ready" ] && break; sleep 0.05; done
[ -s "$dir/registry.ready" ] || al_fail "the registry did not start"

printf '127.0.0.1 localhost\n%s pypi.org files.pythonhosted.org\n' "${net%.0}.2" >"$dir/hosts"
confdir=$(al_tmpdir 0755)
cat >"$confdir/install.yaml" <<YAML
version: 1
network:
  allow-private: [$net/30]
rules:
- name: everything
  tools: ["*"]
  risk: LOW
  require_approval: false
YAML
chmod 0644 "$dir/hosts" "$confdir/install.yaml"
# airlock (and so its proxy's resolver) sees the test's hosts file in a mount namespace of its own.
AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/install.py" "$dir" "$confdir/install.yaml" "$m" -- \
	unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/hosts" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "code_install_package against the test registry (see above)"
cleanup_ns
trap al_inner_cleanup EXIT
al_pass "pip installs from a registry behind the proxy into the session's sandbox; no route fails at once"
