#!/usr/bin/env bash
# run.sh — runs one command as root in a throwaway qemu VM that boots Debian's kernel with cgroup v2
# alone, in the current directory, and exits with the command's status (the tests' vm label).
#
# usage: scripts/vm/run.sh [OPTIONS] -- COMMAND [ARG...]
#        scripts/vm/run.sh --check        say whether this host can run the VM (0) or what is missing (125)
#   --timeout SECS      power the VM off after SECS seconds: exit 124 (default 1800)
#   --cgroup PATH       run COMMAND in /sys/fs/cgroup/PATH, controllers enabled down to it, like a
#                       systemd scope with Delegate=yes (default: the root cgroup)
#   --env NAME=VALUE    add to COMMAND's environment (repeatable); it otherwise holds only
#                       PATH, HOME=/root, LANG=C.UTF-8 and TERM=dumb
#   --kernel FILE       the bzImage to boot (default: the newest /boot/vmlinuz-*); its modules
#                       come from /lib/modules/RELEASE
#   --mem SIZE          guest memory (default 2G)
#   --cpus N            guest CPUs (default: the host's, at most 4)
#   --accel auto|tcg|kvm  auto takes KVM when /dev/kvm can run a stock kernel, else software
#   --console           stream the guest's console (kernel and init messages) to stderr
#
# COMMAND runs as root with its stdout and stderr streamed back separately (not a tty) and stdin
# empty. Its status comes back as run.sh's; 124 means the timeout struck, 125 that the VM itself
# failed (a missing prerequisite, a boot failure: the tail of the guest's console is printed).
# scripts/vm/README.md describes the guest; scripts/deps.sh installs what this needs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# Bump to make every run rebuild its cached boot files once.
CACHE_FORMAT=1
CACHE_ROOT=${AL_VM_CACHE:-/var/tmp/airlock-vm}
# Loaded in this order (with their dependencies first) when the kernel has them as modules.
MODULES=(virtio_pci virtio_console 9pnet_virtio 9p overlay)

die() { echo "vm: $*" >&2; exit 125; }
usage() { sed -n '4,21p' "$here/run.sh" | sed 's/^# \{0,1\}//' >&2; exit 125; }

timeout_s=1800 cgroup="" kernel="" mem=2G cpus="" accel=${AL_VM_ACCEL:-auto} console=0 check=0
envs=()
while (($#)); do
	case $1 in
	--timeout) timeout_s=$2; shift 2 ;;
	--cgroup) cgroup=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--console) console=1; shift ;;
	--check) check=1; shift ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "vm: unknown option $1" >&2; usage ;;
	esac
done
((check || $#)) || usage
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds, not '$timeout_s'"
for e in "${envs[@]+"${envs[@]}"}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env wants NAME=VALUE, not '$e'"
done

# ---------------------------------------------------------------- prerequisites

# Everything the VM needs, each missing piece named with the Debian package that brings it
# (scripts/deps.sh installs them all). The runner never installs anything itself: a test run
# that changes the host is a surprise, and CI must see the missing piece as a failure.
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 (Debian package $2)"); }
need_cmd qemu-system-x86_64 qemu-system-x86
need_cmd cpio cpio
need_cmd modprobe kmod
need_cmd setpriv util-linux
need_cmd xz xz-utils
need_cmd readelf binutils
# The initramfs's shell must run without a libc: Debian's busybox-static is /bin/busybox.
if ! file_is_static=$(LC_ALL=C readelf -l /bin/busybox 2>/dev/null) || [[ $file_is_static == *INTERP* ]]; then
	missing+=("a static /bin/busybox (Debian package busybox-static)")
fi
if [[ -z $kernel ]]; then
	kernel=$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
	[[ -n $kernel ]] || missing+=("a kernel in /boot (Debian package linux-image-amd64)")
fi
[[ -z $kernel || -r $kernel ]] || missing+=("the kernel $kernel (not readable)")
[[ $(id -u) == 0 ]] || missing+=("root (the host's tree is shared with its owners kept)")

# The release string the bzImage carries (boot protocol: a pointer at 0x20e to a NUL-ended
# string, 0x200 bytes into the file), which names its /lib/modules directory.
kernel_release() {
	local off
	[[ $(dd if="$1" bs=1 skip=$((0x202)) count=4 2>/dev/null) == HdrS ]] || return 1
	off=$(od -An -tu2 -j $((0x20e)) -N 2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((off + 0x200)) count=128 2>/dev/null | tr '\0' '\n' | head -n 1 | cut -d ' ' -f 1
}
if [[ -n $kernel && -r $kernel ]]; then
	kernel=$(readlink -f "$kernel")
	release=$(kernel_release "$kernel") || missing+=("a bzImage at $kernel (it is not one)")
	if [[ -n ${release:-} && ! -d /lib/modules/$release ]]; then
		missing+=("/lib/modules/$release (the modules of $kernel: Debian package linux-image-$release)")
	fi
fi

# KVM runs the guest at native speed, but only a real one: a nested PVM host (kvm_pvm) exposes
# /dev/kvm yet cannot run an unmodified kernel, so auto falls back to software emulation there.
if [[ $accel == auto ]]; then
	accel=tcg
	if [[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]]; then accel=kvm; fi
fi
case $accel in tcg | kvm) ;; *) die "--accel wants auto, tcg or kvm, not '$accel'" ;; esac

if ((${#missing[@]})); then
	echo "vm: cannot run the test VM; missing:" >&2
	printf 'vm:   %s\n' "${missing[@]}" >&2
	echo "vm: run 'bash scripts/deps.sh' as root to install them" >&2
	exit 125
fi
if ((check)); then
	echo "vm: ready: kernel $kernel ($release), $accel"
	exit 0
fi

cwd=$(pwd -P)
case $cwd in
/ | /proc | /proc/* | /sys | /sys/* | /dev | /dev/* | *$'\n'*) die "cannot share $cwd as the working directory" ;;
esac
cgroup=${cgroup#/}
cgroup=${cgroup%/}
[[ $cgroup != *..* ]] || die "--cgroup must stay beneath /sys/fs/cgroup"
if [[ -z $cpus ]]; then
	cpus=$(nproc)
	((cpus <= 4)) || cpus=4
fi

# ---------------------------------------------------------------- the cached boot files

# The compressed kernel inside the bzImage (its setup header's payload_offset and payload_length,
# counted from the protected-mode code after the setup sectors), decompressed to the ELF vmlinux.
# qemu boots that ELF through its PVH entry point, so the guest skips decompressing itself,
# which under software emulation costs seconds.
extract_vmlinux() {
	local k=$1 out=$2 setup off len magic
	setup=$(od -An -tu1 -j $((0x1f1)) -N 1 "$k" | tr -d ' ')
	((setup)) || setup=4
	off=$(od -An -tu4 -j $((0x248)) -N 4 "$k" | tr -d ' ')
	len=$(od -An -tu4 -j $((0x24c)) -N 4 "$k" | tr -d ' ')
	off=$(((setup + 1) * 512 + off))
	magic=$(od -An -tx1 -j "$off" -N 4 "$k" | tr -d ' ')
	local -a unpack
	case $magic in
	fd377a58) unpack=(xz -dc) ;;
	28b52ffd) unpack=(zstd -dcq) ;;
	1f8b08*) unpack=(gzip -dc) ;;
	*) return 1 ;;
	esac
	command -v "${unpack[0]}" >/dev/null || return 1
	# The payload ends with the uncompressed size (4 bytes) after the compressed stream.
	dd if="$k" bs=64K iflag=skip_bytes,count_bytes skip="$off" count=$((len - 4)) status=none |
		"${unpack[@]}" >"$out" 2>/dev/null || return 1
	# Xen's PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY, 0x12) is there only with CONFIG_PVH;
	# without it qemu boots the bzImage.
	LC_ALL=C readelf -n "$out" 2>/dev/null | awk '$1 == "Xen" && /\(0x00000012\)/ { ok = 1 } END { exit !ok }'
}

# The initramfs: busybox, the modules this kernel lacks built in (dependencies first, in
# modules/order), and init.sh. Every file is owned by root, and the archive's order is fixed, so
# the same inputs make the same bytes.
build_initramfs() {
	local dir=$1 out=$2 m kind path name
	mkdir -p "$dir/bin" "$dir/modules" "$dir/proc" "$dir/sys" "$dir/dev"
	cp /bin/busybox "$dir/bin/busybox"
	for m in sh mount mkdir insmod cat cp sleep echo ln hostname ip switch_root; do ln -s busybox "$dir/bin/$m"; done
	install -m 0755 "$here/init.sh" "$dir/init"
	: >"$dir/modules/order"
	for m in "${MODULES[@]}"; do
		while read -r kind path _; do
			[[ $kind == insmod ]] || continue
			name=$(basename "$path")
			name=${name%.xz} name=${name%.zst} name=${name%.gz}
			grep -qxF "$name" "$dir/modules/order" && continue
			case $path in
			*.xz) xz -dc "$path" >"$dir/modules/$name" ;;
			*.zst) zstd -dcq "$path" >"$dir/modules/$name" ;;
			*.gz) gzip -dc "$path" >"$dir/modules/$name" ;;
			*) cp "$path" "$dir/modules/$name" ;;
			esac
			echo "$name" >>"$dir/modules/order"
		done < <(modprobe -S "$release" --show-depends "$m") || return 1
	done
	(cd "$dir" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
		cpio --null --create --format=newc --owner=0:0 --quiet) >"$out"
}

# The key covers every input of the boot files: the kernel, busybox, init.sh and the code above.
key=$({
	echo "$CACHE_FORMAT ${MODULES[*]}"
	stat -L -c '%n %s %Y' "$kernel" /bin/busybox
	cat "$here/init.sh"
	declare -f extract_vmlinux build_initramfs
} | sha256sum | cut -c1-16)
cache=$CACHE_ROOT/$release-$key
mkdir -p "$CACHE_ROOT"
# One runner builds while others wait; a half-built cache is never seen (renamed into place).
exec 9>"$CACHE_ROOT/lock"
flock 9
if [[ ! -s $cache/initramfs.cpio ]]; then
	echo "vm: preparing the boot files of $release in $cache" >&2
	build=$(mktemp -d "$CACHE_ROOT/build.XXXXXX")
	build_initramfs "$build/root" "$build/initramfs.cpio" || { rm -rf "$build"; die "cannot build the initramfs"; }
	rm -rf "$build/root"
	extract_vmlinux "$kernel" "$build/vmlinux" || rm -f "$build/vmlinux"
	mv "$build" "$cache"
fi
# Boot files of this release that no run has used for a day (an older init.sh, another checkout's)
# go; those in use are touched at every start, so a concurrent run never loses its own.
touch "$cache"
find "$CACHE_ROOT" -mindepth 1 -maxdepth 1 \( -name "$release-*" -o -name 'build.*' \) ! -path "$cache" -mmin +1440 \
	-exec rm -rf {} + || true
exec 9>&-
boot=$kernel
[[ -s $cache/vmlinux ]] && boot=$cache/vmlinux

# ---------------------------------------------------------------- the job

tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-vm.XXXXXX")
qemu_pid=""
cleanup() {
	[[ -z $qemu_pid ]] || kill "$qemu_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The job goes in as data appended to the initramfs (the kernel unpacks concatenated archives in
# turn): no share to write, nothing quoted into a script.
mkdir -p "$tmp/job/job"
install -m 0755 "$here/guest.sh" "$tmp/job/job/guest.sh"
printf '%s\0' "$@" >"$tmp/job/job/argv"
printf '%s\0' "${envs[@]+"${envs[@]}"}" >"$tmp/job/job/env"
[[ ${#envs[@]} -gt 0 ]] || : >"$tmp/job/job/env"
printf '%s\n' "$cwd" >"$tmp/job/job/cwd"
printf '%s\n' "$cgroup" >"$tmp/job/job/cgroup"
date +%s.%N >"$tmp/job/job/clock"
(cd "$tmp/job" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
	cpio --null --create --format=newc --owner=0:0 --quiet) >"$tmp/job.cpio"
cat "$cache/initramfs.cpio" "$tmp/job.cpio" >"$tmp/initrd"

# ---------------------------------------------------------------- the VM

# qemu writes the guest's stdout and stderr ports straight into ours when they are pipes or
# terminals: it reopens our descriptors 3 and 4 through /dev/fd. A regular file is relayed by a
# cat instead, which shares our file offset (a reopened file would have its own, and what our
# caller writes next would overwrite the command's output); so is a socket, which cannot be
# reopened at all.
exec 3>&1 4>&2
relays=()
if [[ ! -p /dev/fd/3 && ! -c /dev/fd/3 ]]; then exec 3> >(cat); relays+=($!); fi
if [[ ! -p /dev/fd/4 && ! -c /dev/fd/4 ]]; then exec 4> >(cat >&2); relays+=($!); fi
out=/dev/fd/3 err=/dev/fd/4
con=$tmp/console
((console == 0)) || con=$err

cmdline=(console=ttyS0 quiet panic=-1 rdinit=/init
	# cgroup v2 only: the v1 hierarchies cannot even be mounted
	cgroup_no_v1=all
	# the guest is the test's, not an attacker's: no speculation mitigations (slow under emulation)
	mitigations=off
	# The TSC as the clock (read in the vDSO), not the HPET (a system call and an emulated device
	# read per clock_gettime, which makes anything that checks the time in a loop crawl): qemu
	# derives every vCPU's TSC from the host's one constant counter, so the kernel's check, which
	# load on the host can fool into calling it unsynchronized, is skipped.
	tsc=reliable
	# no zeroing of every page and object the kernel allocates (a hardening default of Debian's
	# kernel; memset is costly under emulation, and the tests do not depend on it)
	init_on_alloc=0
	# no keyboard or mouse to probe; no entropy to wait for
	i8042.noaux i8042.nokbd random.trust_cpu=on)
if [[ $accel == kvm ]]; then
	accel_args=(-accel kvm -cpu host)
else
	accel_args=(-accel tcg,thread=multi -cpu max)
fi
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	-machine pc "${accel_args[@]}" -smp "$cpus" -m "$mem"
	-kernel "$boot" -initrd "$tmp/initrd" -append "${cmdline[*]}"
	-chardev "file,id=con,path=$con,append=on" -serial chardev:con
	-virtfs "local,path=/,mount_tag=airlock-root,security_model=passthrough,readonly=on,multidevs=remap"
	-virtfs "local,path=${cwd//,/,,},mount_tag=airlock-work,security_model=passthrough,multidevs=remap"
	-device virtio-serial-pci,id=ports
	-chardev "file,id=out,path=$out,append=on" -device virtserialport,bus=ports.0,chardev=out,name=airlock.stdout
	-chardev "file,id=err,path=$err,append=on" -device virtserialport,bus=ports.0,chardev=err,name=airlock.stderr
	-chardev "file,id=status,path=$tmp/status" -device virtserialport,bus=ports.0,chardev=status,name=airlock.status)

# setpriv --pdeathsig: if this runner is killed outright (a CTest timeout), timeout and then qemu
# go with it rather than running on to the deadline.
setpriv --pdeathsig KILL -- timeout -k 5 "$timeout_s" \
	setpriv --pdeathsig KILL -- "${qemu[@]}" </dev/null >"$tmp/qemu.log" 2>&1 &
qemu_pid=$!
set +e
wait "$qemu_pid"
qemu_rc=$?
set -e
qemu_pid=""
# Every byte of the command's output is out before we exit.
exec 3>&- 4>&-
wait "${relays[@]+"${relays[@]}"}" 2>/dev/null || true

if read -r rc 2>/dev/null <"$tmp/status" && [[ $rc =~ ^[0-9]+$ ]]; then
	exit "$rc"
fi
if ((qemu_rc == 124)); then
	echo "vm: timed out after ${timeout_s}s" >&2
	code=124
else
	echo "vm: the VM ended without the command's exit status (qemu: $qemu_rc)" >&2
	code=125
fi
cat "$tmp/qemu.log" >&2
if [[ -s $tmp/console ]]; then
	echo "vm: the guest console's last lines:" >&2
	tail -n 40 "$tmp/console" >&2
fi
exit "$code"
