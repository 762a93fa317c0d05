#!/usr/bin/env bash
# manifests.sh — the deploy/ check: the manifests and the containerd block pass check_manifests.py, and each of a set of broken copies fails it.
#
# One CTest case (deploy.manifests), not one per run mode: nothing here runs airlock, so root
# and user would check the same files twice. What always runs: python3 with python3-yaml (the
# schema and cross-reference check) and a broken copy per mistake it must catch, since a check
# that cannot fail is a defect. With containerd installed: the block merged into containerd's
# own default configuration, and install-node.sh run against a scratch configuration (twice:
# idempotent; and refused on a version 3 file). With kubectl: every manifest parses as a
# Kubernetes object (`kubectl annotate --local`, which needs no cluster; `kubectl apply
# --dry-run=client` does, for API discovery, so it is not used).
# Environment: AL_SRC (the checkout; default: this file's ../..), CI=true (a missing tool that
# the always-on part needs is a failure, not a skip).
set -euo pipefail

src=${AL_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
py=/usr/bin/python3
[[ -x $py ]] || py=python3
fails=0

say() { printf '# %s\n' "$*" >&2; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	fails=$((fails + 1))
}

# shellcheck source=tests/skips.sh
. "$(dirname "$0")/../skips.sh"
"$py" -c 'import yaml, tomllib' 2>/dev/null ||
	al_skip_or_fail "${AL_CTEST:-deploy.manifests}" "python3 with yaml and tomllib (python3-yaml, Python 3.11) is needed"

# A marked scratch directory, removed on exit only if it still carries the marker.
tmp=$(mktemp -d /tmp/al-manifests.XXXXXX)
touch "$tmp/.airlock-test"
cleanup() { [[ -f $tmp/.airlock-test ]] && rm -rf --one-file-system "$tmp"; }
trap cleanup EXIT

# containerd's own defaults, when it is here: the block is merged into what a node really has.
if command -v containerd >/dev/null 2>&1; then
	CONTAINERD_DEFAULT_CONFIG_TEXT=$(containerd config default)
	export CONTAINERD_DEFAULT_CONFIG_TEXT
fi

check() { "$py" "$src/tests/deploy/check_manifests.py" "$1"; }

# ---- the repository's own files pass -------------------------------------------------------
if out=$(check "$src" 2>&1); then
	say "deploy/ passes: ${out##*$'\n'}"
else
	fail "deploy/ does not pass check_manifests.py:"$'\n'"$out"
fi
bash -n "$src/deploy/kubernetes/install-node.sh" || fail "install-node.sh is not valid bash"

# ---- each broken copy fails, naming the mistake --------------------------------------------
# A copy of what the checker reads: deploy/ and the server's route table and option table.
copy() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/src/http" "$tmp/t/src/serve"
	cp -r "$src/deploy" "$tmp/t/deploy"
	cp "$src/src/http/route.c" "$tmp/t/src/http/"
	cp "$src/src/serve/main.c" "$tmp/t/src/serve/"
}

# broken FILE SED-SCRIPT EXPECTED — after SED-SCRIPT on FILE (relative to the copy), the
# check must fail with a line matching EXPECTED.
broken() {
	local file=$1 script=$2 want=$3 out
	copy
	sed -i "$script" "$tmp/t/$file"
	if cmp -s "$src/$file" "$tmp/t/$file"; then
		fail "mutation '$script' changed nothing in $file: fix the test"
		return
	fi
	if out=$(check "$tmp/t" 2>/dev/null); then
		fail "$file with '$script' passes; it should fail with '$want'"
	elif ! grep -qE -- "$want" <<<"$out"; then
		fail "$file with '$script' fails, but not with '$want':"$'\n'"$out"
	fi
}

k=deploy/kubernetes
toml=deploy/containerd/airlock-runtime.toml
broken $k/runtimeclass.yaml 's/^handler: airlock/handler: airlok/' "handler 'airlok' is not the containerd runtime"
broken $k/runtimeclass.yaml 's|node.k8s.io/v1$|node.k8s.io/v1beta7|' 'unknown apiVersion/kind node.k8s.io/v1beta7'
broken $k/runtimeclass.yaml '0,/airlock.dev\/runtime: "true"/s//airlock.dev\/runtime: true/' 'not a string label value'
broken $k/runtimeclass.yaml '/^scheduling:/,/^overhead:/{/nodeSelector:/,/runtime: "true"/d}' 'no scheduling.nodeSelector'
broken $k/runtimeclass.yaml 's/memory: 24Mi/memory: 24 megs/' 'not a quantity'
broken $k/installer.yaml 's|value: /usr/local/bin|value: /opt/bin|' 'AIRLOCK_BIN_DIR=/opt/bin'
broken $k/installer.yaml 's|/usr/local/libexec/airlock/install-node.sh|/usr/libexec/airlock/install-node.sh|' 'which the image does not have'
broken $k/installer.yaml '/^      hostPID: true/d' 'needs privileged and hostPID'
broken $k/installer.yaml '/^      nodeSelector:/,+1s/"true"/"yes"/' 'the RuntimeClass sends pods to'
broken $k/installer.yaml 's|image: registry.k8s.io/pause:3.9|image: registry.k8s.io/pause|' 'name a version'
broken $toml 's|/usr/local/bin/airlock-runc|/opt/bin/airlock-runc|' 'installs to /usr/local/bin by default'
broken $toml 's|runtimes\.airlock|runtimes.sandbox|' "handler 'airlock' is not the containerd runtime 'sandbox'"
broken $toml 's|BinaryName = "\(.*\)"|BinaryName = "\1|' 'not TOML'
broken $toml 's|runtime_type = "io.containerd.runc.v2"|runtime_type = "io.containerd.runsc.v1"|' 'runtime_type'
broken $toml 's|    BinaryName|    BinaryPath = "/x"\n    BinaryName|' 'options.BinaryPath is not an option'
broken $toml '/^# END airlock$/d' "BEGIN airlock' and '# END airlock"
broken $k/serve.yaml '0,/app.kubernetes.io\/name: airlock-serve$/! {0,/^      app.kubernetes.io\/name: airlock-serve$/s//      app.kubernetes.io\/name: airlock-server/}' 'does not match the template'
broken $k/serve.yaml 's|"--unix-socket", "/run/airlock/serve.sock", "http://localhost/v1/health"\]|"--unix-socket", "/run/airlock.sock", "http://localhost/v1/health"]|' 'probe asks socket /run/airlock.sock'
broken $k/serve.yaml '0,/v1\/health"\]/s//healthz"]/' 'is not a route of the server'
broken $k/serve.yaml 's/defaultMode: 0400/defaultMode: 0440/' 'lets group or others read it'
broken $k/serve.yaml 's/secretName: airlock-serve-tokens/secretName: airlock-serve-token/' 'Secret airlock-system/airlock-serve-token is not defined'
broken $k/serve.yaml 's|subPath: approver.tokens|subPath: approvers.tokens|' 'Secret airlock-serve-tokens has no key approvers.tokens'
broken $k/serve.yaml '0,/mountPath: \/etc\/airlock\/tokens\/client.tokens/s//mountPath: \/etc\/airlock\/client.tokens/' 'not a subPath mount of a Secret key'
broken $k/serve.yaml 's/            - --token-file/            - --tokens-file/' 'airlock serve has no option --tokens-file'
broken $k/serve.yaml 's/            - 0.0.0.0:8080/            - 0.0.0.0:8081/' 'port not among the container'
broken $k/serve.yaml 's/            - 0.0.0.0:8080/            - 127.0.0.1:8080/' 'listens on loopback'
broken $k/serve.yaml 's/prometheus.io\/port: "8080"/prometheus.io\/port: "9090"/' 'prometheus.io/port'
broken $k/serve.yaml 's/prometheus.io\/path: \/metrics/prometheus.io\/path: \/v1\/metrics/' 'prometheus.io/path'
broken $k/serve.yaml 's/      targetPort: http/      targetPort: web/' "targetPort 'web' is no port"
broken $k/serve.yaml 's/claimName: airlock-audit/claimName: airlock-log/' 'PersistentVolumeClaim airlock-log'
broken $k/serve.yaml 's/^      automountServiceAccountToken: false/      automountServiceAccountToken: false\n      securityContext:\n        fsGroup: 1000/' 'fsGroup'
broken $k/serve.yaml 's/^            - name: audit$/            - name: auditlog/' 'volumeMount auditlog names no volume'
broken $k/serve.yaml 's/^kind: Deployment/kind Deployment/' 'not YAML'
broken $k/example-pod.yaml 's/runtimeClassName: airlock/runtimeClassName: airlocked/' 'RuntimeClass airlocked'
broken $k/namespace.yaml 's/name: airlock-system/name: airlock/' 'namespace airlock-system is not defined'
broken deploy/image/Containerfile 's/libmicrohttpd12 curl /libmicrohttpd12 /' 'runs curl, which the image'
broken deploy/image/Containerfile 's|/out/usr/local/share/airlock/containerd/airlock-runtime.toml|/out/usr/share/airlock/airlock-runtime.toml|' 'does not install the containerd block'

# ---- the installer against a scratch containerd configuration ------------------------------
if command -v containerd >/dev/null 2>&1; then
	node=$tmp/node
	mkdir -p "$node/bin"
	printf '%s\n' "$CONTAINERD_DEFAULT_CONFIG_TEXT" >"$node/config.toml"
	install_node() {
		HOST_ROOT=/ AIRLOCK_BIN_DIR=$node/bin AIRLOCK_SRC_BIN=/bin/true CONTAINERD_CONFIG=$node/config.toml \
			AIRLOCK_CONTAINERD_BLOCK=$src/$toml AIRLOCK_RESTART_CONTAINERD=0 bash "$src/$k/install-node.sh"
	}
	if ! out=$(install_node 2>&1); then
		fail "install-node.sh failed on containerd's default configuration: $out"
	else
		dump=$(containerd --config "$node/config.toml" config dump 2>&1)
		grep -q "BinaryName = \"$node/bin/airlock-runc\"" <<<"$dump" || fail "after install-node.sh containerd does not see BinaryName $node/bin/airlock-runc"
		grep -q 'runtimes\.runc\]' <<<"$dump" || fail "after install-node.sh containerd has lost its runc runtime"
		[[ -x $node/bin/airlock && $(readlink "$node/bin/airlock-runc") == airlock ]] || fail "install-node.sh did not install airlock and the airlock-runc link"
		cp "$node/config.toml" "$node/first.toml"
		out=$(install_node 2>&1) || fail "install-node.sh failed on a second run: $out"
		cmp -s "$node/config.toml" "$node/first.toml" || fail "a second install-node.sh run changed the configuration again"
		grep -q 'already registers' <<<"$out" || fail "a second install-node.sh run did not say it had nothing to do: $out"
		say "install-node.sh: registered in containerd's default configuration, idempotent"
	fi
	sed -i 's/^version = 2/version = 3/' "$node/config.toml"
	if out=$(install_node 2>&1); then
		fail "install-node.sh accepted a version 3 (containerd 2.x) configuration"
	else
		grep -q "config version '3'" <<<"$out" || fail "install-node.sh refused a version 3 file without saying why: $out"
	fi
else
	say "containerd is not installed: the installer is checked by bash -n only"
fi

# ---- kubectl, offline ----------------------------------------------------------------------
if command -v kubectl >/dev/null 2>&1; then
	# No cluster: an empty kubeconfig, and --local so that nothing is asked of a server.
	if objs=$(KUBECONFIG=/dev/null timeout 20 kubectl annotate --local -f "$src/$k" airlock.dev/checked=1 -o name 2>&1); then
		want=$("$py" -c 'import sys,yaml,glob
print(sum(1 for f in glob.glob(sys.argv[1] + "/*.yaml") for d in yaml.safe_load_all(open(f)) if d))' "$src/$k")
		have=$(grep -c / <<<"$objs")
		[[ $have == "$want" ]] || fail "kubectl reads $have objects, the manifests hold $want: $objs"
		say "kubectl reads the $have objects"
	else
		fail "kubectl cannot read the manifests: $objs"
	fi
else
	say "kubectl is not installed: the schema check above is the only one"
fi

if ((fails)); then
	echo "manifests: $fails failures" >&2
	exit 1
fi
echo "manifests: ok"
