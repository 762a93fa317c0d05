#!/usr/bin/env bash
# install-node.sh — installs airlock-runc on a Kubernetes node and registers it with the node's containerd (run by the installer DaemonSet).
#
# Runs in a privileged init container with the node's root at $HOST_ROOT (default /host) and
# the node's pid namespace (hostPID), or by hand on the node with HOST_ROOT=/. Steps:
#   1. copy the static airlock binary to $HOST_ROOT$BIN_DIR/airlock (atomically: a running
#      container's runtime is never a half-written file) and link airlock-runc to it;
#   2. append the runtime block (deploy/containerd/airlock-runtime.toml, shipped in the image)
#      to the node's /etc/containerd/config.toml, or replace an older copy between its markers;
#   3. check the result with the node's own containerd (`containerd config dump`): the airlock
#      runtime is there and the runc runtime still is;
#   4. restart containerd only if the file changed (running containers keep running: their
#      shims are separate processes).
# Idempotent: a second run with the same binary and block changes nothing and restarts nothing.
set -euo pipefail

HOST_ROOT=${HOST_ROOT:-/host}
# Where containerd's BinaryName points (the block's dirname): both must change together.
BIN_DIR=${AIRLOCK_BIN_DIR:-/usr/local/bin}
SRC_BIN=${AIRLOCK_SRC_BIN:-/usr/local/bin/airlock}
BLOCK=${AIRLOCK_CONTAINERD_BLOCK:-/usr/local/share/airlock/containerd/airlock-runtime.toml}
CONFIG=${CONTAINERD_CONFIG:-/etc/containerd/config.toml}
RESTART=${AIRLOCK_RESTART_CONTAINERD:-1}

die() {
	echo "install-node: $*" >&2
	exit 1
}

log() {
	echo "install-node: $*"
}

# host CMD... — runs a command of the node (its containerd, its systemctl) in the node's root.
host() {
	if [[ $HOST_ROOT == / ]]; then
		"$@"
	else
		chroot "$HOST_ROOT" "$@"
	fi
}

install_binary() {
	local dir=$HOST_ROOT$BIN_DIR
	mkdir -p "$dir"
	if cmp -s "$SRC_BIN" "$dir/airlock"; then
		log "airlock in $BIN_DIR is up to date"
	else
		# Same directory, then rename: containerd may exec airlock-runc at any moment.
		install -m 0755 "$SRC_BIN" "$dir/.airlock.new"
		mv -f "$dir/.airlock.new" "$dir/airlock"
		log "installed airlock in $BIN_DIR"
	fi
	# airlock picks its runc personality from the name it was run by.
	ln -sfn airlock "$dir/airlock-runc"
}

# The block with BinaryName pointing into $BIN_DIR (the shipped block says /usr/local/bin).
block_text() {
	sed "s|BinaryName = \".*\"|BinaryName = \"$BIN_DIR/airlock-runc\"|" "$BLOCK" | sed -n '/^# BEGIN airlock$/,/^# END airlock$/p'
}

# new_config OLD NEW — NEW is OLD without any earlier airlock block, plus the current one.
new_config() {
	local old=$1 new=$2
	# Without the old block and the blank lines at the end, so a rerun adds no line.
	sed '/^# BEGIN airlock$/,/^# END airlock$/d' "$old" |
		awk '/^[[:space:]]*$/ { blank = blank $0 "\n"; next } { printf "%s", blank; blank = ""; print }' >"$new"
	# Another definition of the runtime outside our markers would make the TOML invalid (a
	# table defined twice) or, worse, win: refuse and let the operator merge by hand.
	if grep -q 'runtimes\.airlock\]' "$new"; then
		die "$CONFIG already defines runtimes.airlock outside the airlock markers: merge by hand"
	fi
	printf '\n' >>"$new"
	block_text >>"$new"
}

check_version() {
	local v
	v=$(sed -n 's/^version *= *\([0-9]*\).*/\1/p' "$1" | head -n1)
	# Version 3 (containerd 2.x) names the CRI runtime plugin io.containerd.cri.v1.runtime;
	# version 1 has no runtime options: neither takes this block.
	[[ $v == 2 ]] || die "$CONFIG is config version '${v:-none}', this block is for version 2 (containerd 1.6/1.7): see docs/kubernetes.md"
}

# verify FILE — the node's containerd reads FILE and sees both runtimes.
verify() {
	local dump path=$1
	[[ $HOST_ROOT == / ]] || path=${path#"$HOST_ROOT"}
	dump=$(host containerd --config "$path" config dump 2>&1) || die "containerd rejects the new configuration: $dump"
	grep -q 'runtimes\.airlock\]' <<<"$dump" || die "containerd does not see the airlock runtime in the new configuration"
	grep -q "BinaryName = \"$BIN_DIR/airlock-runc\"" <<<"$dump" || die "containerd does not see BinaryName $BIN_DIR/airlock-runc"
	grep -q 'runtimes\.runc\]' <<<"$dump" || die "the new configuration has lost the runc runtime: not installing it"
}

configure_containerd() {
	local cfg=$HOST_ROOT$CONFIG
	local tmp=$cfg.airlock-new
	if [[ ! -e $cfg ]]; then
		# No file means containerd's defaults; a file holding only our block would replace the
		# default runtimes (runc) with ours. Start from the node's own defaults instead.
		mkdir -p "$(dirname "$cfg")"
		host containerd config default >"$cfg" || die "no $CONFIG and 'containerd config default' failed"
		log "wrote containerd's defaults to $CONFIG"
	fi
	check_version "$cfg"
	new_config "$cfg" "$tmp"
	if cmp -s "$cfg" "$tmp"; then
		rm -f "$tmp"
		log "$CONFIG already registers the airlock runtime"
		return
	fi
	verify "$tmp"
	cp -p "$cfg" "$cfg.airlock-bak"
	mv -f "$tmp" "$cfg"
	log "registered the airlock runtime in $CONFIG (previous file: $CONFIG.airlock-bak)"
	changed=1
}

restart_containerd() {
	if [[ $RESTART != 1 ]]; then
		log "AIRLOCK_RESTART_CONTAINERD=$RESTART: restart containerd yourself to load the runtime"
		return
	fi
	# hostPID makes pid 1 the node's init: enter its namespaces to reach the node's systemd.
	if [[ $HOST_ROOT == / ]]; then
		systemctl restart containerd
	else
		nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart containerd
	fi
	log "restarted containerd"
}

main() {
	[[ -x $SRC_BIN ]] || die "no airlock binary at $SRC_BIN"
	[[ -r $BLOCK ]] || die "no containerd block at $BLOCK"
	[[ -d $HOST_ROOT ]] || die "the node's root is not mounted at $HOST_ROOT"
	# Called plainly, not in an `if`, so that set -e still stops at any failed step inside.
	changed=0
	install_binary
	configure_containerd
	if ((changed)); then
		restart_containerd
	fi
}

main "$@"
