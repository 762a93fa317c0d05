#!/bin/sh
# init.sh — the test VM's first process (busybox sh in the initramfs): loads the virtio and 9p
# modules, builds the root (the host's / read-only under a throwaway tmpfs overlay, the working
# directory read-write), mounts cgroup v2 alone, and hands over to the job's guest.sh.
#
# The initramfs holds busybox, the kernel's modules (modules/, loaded in the order of
# modules/order) and this file; run.sh appends the job (/job: guest.sh, argv, env, cwd, cgroup,
# clock) as a second cpio archive, which the kernel unpacks over the first.
export PATH=/bin

# Nothing can be reported once this fails: say why on the console (the host prints its tail when
# no exit status came back) and power off, so the host never waits for its timeout.
die() {
	echo "airlock-vm init: $*" >&2
	echo o >/proc/sysrq-trigger
	sleep 5
	exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

while read -r m; do
	insmod "/modules/$m" || die "insmod $m failed"
done </modules/order

# 9p over virtio; a large msize (the most virtio's transport takes) makes reads of programs and
# libraries take fewer round trips.
P9=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /host /rw /newroot
# The host's / is the lower layer, read-only with the guest's page cache trusted (cache=loose):
# the VM lives for one command, and nothing on the host outside the working directory is meant to
# change meanwhile. Whatever the guest writes outside the working directory lands in the tmpfs
# upper layer and is gone at power-off.
mount -t 9p -o "$P9,ro,cache=loose" airlock-root /host || die "cannot mount the host's root"
mount -t tmpfs -o mode=0755 tmpfs /rw || die "cannot mount the overlay's tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "cannot mount the overlay root"

R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
# cgroup v2 alone (cgroup_no_v1=all on the command line), mounted as systemd mounts it, so a
# delegated subtree cannot be escaped by writing to an ancestor's cgroup.procs (nsdelegate).
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 $R/sys/fs/cgroup ||
	die "cannot mount cgroup2"
mount -t securityfs securityfs $R/sys/kernel/security 2>/dev/null
mount --move /dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o newinstance,mode=0620,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=0755 tmpfs $R/run
# /tmp holds the tests' state directories, and serve promises each sandbox room for its whole disk
# limit there (1 GiB by default): half the guest's memory, tmpfs's default size, is less than a
# few sandboxes' promise. tmpfs reserves nothing, so a larger size costs only what is written.
mount -t tmpfs -o mode=1777,size=16G tmpfs $R/tmp
mkdir -p $R/run/lock $R/run/airlock-vm
cp -r /job $R/run/airlock-vm/job || die "cannot copy the job"

# What needs no program from the host is done here, with busybox from the initramfs (each
# program the guest.sh would run comes over 9p): the name, lo, and the serial ports' names.
hostname airlock-vm
ip link set lo up || echo "airlock-vm init: cannot bring lo up" >&2
# The host names the virtio serial ports (airlock.stdout, airlock.stderr, airlock.status) a
# moment after the driver loads; they get the links udev would make.
mkdir -p $R/dev/virtio-ports
i=0
while [ $i -lt 500 ]; do
	for p in /sys/class/virtio-ports/*; do
		[ -r "$p/name" ] && ln -sfn "../${p##*/}" "$R/dev/virtio-ports/$(cat "$p/name")"
	done
	[ -e $R/dev/virtio-ports/airlock.status ] && [ -e $R/dev/virtio-ports/airlock.stdout ] &&
		[ -e $R/dev/virtio-ports/airlock.stderr ] && break
	sleep 0.01
	i=$((i + 1))
done
[ $i -lt 500 ] || die "the virtio serial ports did not appear"

# The working directory last, so it shows even beneath /tmp or /run. cache=mmap: the guest
# keeps no stale copy of what it writes, so the host sees every byte when the VM is gone.
cwd=$(cat /job/cwd)
if [ -n "$cwd" ]; then
	mkdir -p "$R$cwd"
	mount -t 9p -o "$P9,cache=mmap" airlock-work "$R$cwd" || die "cannot mount $cwd"
fi

exec switch_root $R /bin/bash /run/airlock-vm/job/guest.sh
die "switch_root failed"
