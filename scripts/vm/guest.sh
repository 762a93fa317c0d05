#!/bin/bash
# guest.sh — PID 1 of the test VM once its root is built (see init.sh): sets the clock, brings up
# lo, enables the cgroup v2 controllers, runs the job's command in its cgroup with the job's
# environment, and sends the command's exit status back to the host before powering off.
#
# The job is data, never code: /run/airlock-vm/job/argv and env are NUL-separated lists, cwd and
# cgroup one line each, clock the host's time when it wrote the job. Nothing here is generated.
J=/run/airlock-vm/job
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The host's console log (ttyS0) is what the runner shows when no exit status came back.
say() { echo "airlock-vm guest: $*" >/dev/console; }

# Power off at once: the VM is throwaway, and the only data that must survive (the command's
# writes in the working directory) went to the host synchronously over 9p; sync covers mmap.
power_off() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}

# The virtio serial ports the host named (airlock.stdout, airlock.stderr, airlock.status) appear
# as /dev/vportNpM; their names arrive from the host a moment after the driver loads.
port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		for p in /sys/class/virtio-ports/*; do
			[ "$(cat "$p/name" 2>/dev/null)" = "$1" ] && { echo "/dev/${p##*/}"; return 0; }
		done
		sleep 0.02
	done
	return 1
}

# The clock: the guest's RTC gives whole seconds only. The host's time when it wrote the job plus
# the guest's uptime is behind the host by the time qemu takes to reach the kernel (tenths of a
# second), and never ahead, so a file the guest creates is never newer than the guest's "now".
set_clock() {
	local host up
	read -r host <"$J/clock"
	read -r up _ </proc/uptime
	date -u -s "@$(awk -v h="$host" -v u="$up" 'BEGIN { printf "%.3f", h + u }')" >/dev/null
}

# Like systemd: cpu, io, memory and pids enabled in the root and on the way down to the job's
# cgroup's parent; the job's own cgroup has them available (cgroup.controllers) for its processes
# to hand to children, as a delegated scope does. An empty name leaves the job in the root.
make_cgroup() {
	local d=/sys/fs/cgroup part
	local -a parts
	IFS=/ read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		[ -n "$part" ] || continue
		echo "+cpu +io +memory +pids" >"$d/cgroup.subtree_control" || return 1
		d=$d/$part
		mkdir -p "$d" || return 1
	done
	echo "$d"
}

# The command's process: its own cgroup, the job's environment and nothing else, stdin empty.
run_job() {
	local cg=$1 v
	local -a argv env
	mapfile -d '' -t argv <"$J/argv"
	mapfile -d '' -t env <"$J/env"
	if [ -n "$cg" ]; then
		echo "$BASHPID" >"$cg/cgroup.procs" || exit 125
	fi
	local path=$PATH
	for v in $(compgen -e); do unset "$v"; done
	export HOME=/root LANG=C.UTF-8 TERM=dumb PATH=$path
	for v in "${env[@]}"; do export "$v"; done
	cd "$(cat "$J/cwd")" || exit 125
	exec "${argv[@]}"
}

main() {
	local out err status cgname cg="" rc
	hostname airlock-vm
	ip link set lo up || say "cannot bring lo up"
	set_clock || say "cannot set the clock"
	out=$(port airlock.stdout) && err=$(port airlock.stderr) && status=$(port airlock.status) ||
		{ say "the virtio serial ports did not appear"; power_off; }
	read -r cgname <"$J/cgroup" || cgname=""
	echo "+cpu +io +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control ||
		say "cannot enable the controllers in the root cgroup"
	if [ -n "$cgname" ]; then
		cg=$(make_cgroup "$cgname") || { say "cannot make cgroup $cgname"; echo 125 >"$status"; power_off; }
	fi
	(run_job "$cg") </dev/null >"$out" 2>"$err"
	rc=$?
	echo "$rc" >"$status"
	power_off
}

main
