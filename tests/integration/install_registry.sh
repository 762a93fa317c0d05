#!/usr/bin/env bash
# install_registry.sh — code_install_package end to end (tests/mcp/install.py): registries over
# HTTPS in a network namespace this test makes, named pypi.org, files.pythonhosted.org and
# registry.npmjs.org for airlock only (a private mount namespace with its own /etc/hosts) and
# allowed as a private address by the configuration; pip and npm install into the MCP session's
# own sandbox through the egress proxy and a later code_execute imports each package. The host
# is made as root in both modes; airlock runs as the mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making a network namespace and a private /etc/hosts needs root"
for t in ip openssl unshare; do command -v "$t" >/dev/null || al_skip "$t is missing"; done
dir=$(al_mcp_dir install.py registry.py)
m=$(al_marker)
"$AL_PY" "$AL_SRC/tests/mcp/mkwheel.py" "$m" "$dir/airlock_demo-1.0-py3-none-any.whl"

# The registry's certificate, for both names, signed by a test CA only the sandbox's pip trusts.
al_test_certs "$dir" pypi.org files.pythonhosted.org registry.npmjs.org
chmod 0644 "$dir"/*

# The registry's host, in a namespace of our own on a /30 of a private range.
net="10.214.$((RANDOM % 250)).0"
al_netns_host "$net"
al_bg ip netns exec "$AL_NS" "$AL_PY" "$dir/registry.py" "$dir" "$AL_NS_ADDR" "$m"
for _ in $(seq 100); do [ -s "$dir/registry.ready" ] && break; sleep 0.05; done
[ -s "$dir/registry.ready" ] || al_fail "the registry did not start"

printf '127.0.0.1 localhost\n%s pypi.org files.pythonhosted.org registry.npmjs.org\n' "$AL_NS_ADDR" >"$dir/hosts"
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
# The same registries with request rules: airlock terminates their TLS (verified against the test
# CA), and each install names what it fetched.
cat >"$confdir/install_tls.yaml" <<YAML
version: 1
network:
  allow-private: [$net/30]
  upstream-ca: $dir/ca.pem
  registries:
    pypi: ["GET|HEAD pypi.org/", "GET|HEAD files.pythonhosted.org/"]
    npm: ["GET|HEAD registry.npmjs.org/"]
rules:
- name: everything
  tools: ["*"]
  risk: LOW
  require_approval: false
YAML
chmod 0644 "$dir/hosts" "$confdir/install.yaml" "$confdir/install_tls.yaml"
# airlock (and so its proxy's resolver) sees the test's hosts file in a mount namespace of its own.
AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/install.py" "$dir" "$confdir/install.yaml" "$m" "$confdir/install_tls.yaml" -- \
	unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/hosts" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "code_install_package against the test registry (see above)"
al_netns_host_del
al_pass "pip and npm install from registries behind the proxy into the session's sandbox; no route fails at once"
