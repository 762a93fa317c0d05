#!/bin/bash
# guest.sh — PID 1 of the test VM once its root is built (see init.sh): sets the clock, enables the
# cgroup v2 controllers, runs the job's command in its cgroup with the job's environment, and sends
# the command's exit status back to the host before powering off.
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

# The clock. The guest's RTC counts whole seconds from an offset of qemu's choosing, and the
# host's time when it wrote the job plus the guest's uptime misses qemu's start (seconds on a
# loaded host). A file created in the working directory, which is the host's over 9p, carries the
# host's time of its creation to the nanosecond: the guest takes that, plus the time it spent
# reading it, and removes the file at once. Where the directory is not writable, the job's stamp
# is the fallback (behind by the boot's duration, never ahead).
uptime_cs() {
	local up
	read -r up _ </proc/uptime
	echo $((${up%.*} * 100 + 10#${up#*.}))
}
set_clock() {
	local f t0 t1 ns stamp
	# a name no other VM sharing this directory picks at the same time
	read -r f <"$J/cwd"
	f=$f/.airlock-vm-clock.$SRANDOM$SRANDOM
	t0=$(uptime_cs)
	if : >"$f" 2>/dev/null && stamp=$(stat -c %.9Y "$f"); then
		rm -f "$f"
	else
		rm -f "$f" 2>/dev/null
		read -r stamp <"$J/clock"
		t0=0
		say "the working directory is not writable: the clock may be behind by the boot's duration"
	fi
	t1=$(uptime_cs)
	# nanoseconds, in bash's 64-bit arithmetic (no awk or bc to load over 9p)
	ns=$((${stamp%.*} * 1000000000 + 10#${stamp#*.} + (t1 - t0) * 10000000))
	date -u -s "@$((ns / 1000000000)).$(printf '%09d' $((ns % 1000000000)))" >/dev/null
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
	local cg=$1 v cwd
	local -a argv env
	mapfile -d '' -t argv <"$J/argv"
	mapfile -d '' -t env <"$J/env"
	if [ -n "$cg" ]; then
		echo "$BASHPID" >"$cg/cgroup.procs" || exit 125
	fi
	local path=$PATH
	for v in $(compgen -e); do unset "$v"; done
	export HOME=/root LANG=C.UTF-8 TERM=dumb PATH=$path
	# shellcheck disable=SC2163 # each v is NAME=VALUE, exported as such
	for v in "${env[@]}"; do export "$v"; done
	read -r cwd <"$J/cwd"
	cd "$cwd" || exit 125
	exec "${argv[@]}"
}

main() {
	local p=/dev/virtio-ports cgname cg="" rc
	set_clock || say "cannot set the clock"
	read -r cgname <"$J/cgroup" || cgname=""
	echo "+cpu +io +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control ||
		say "cannot enable the controllers in the root cgroup"
	if [ -n "$cgname" ]; then
		cg=$(make_cgroup "$cgname") || { say "cannot make cgroup $cgname"; echo 125 >$p/airlock.status; power_off; }
	fi
	(run_job "$cg") </dev/null >$p/airlock.stdout 2>$p/airlock.stderr
	rc=$?
	echo "$rc" >$p/airlock.status
	power_off
}

main
