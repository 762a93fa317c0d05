#!/usr/bin/env bash
# check.sh — `airlock check` reports what this host can do: its JSON is well formed and agrees with independent probes.
#
# Standalone on purpose (no tests/lib.sh): in user mode as root, airlock and every
# independent probe run as uid/gid 65534 from a copy of the binary in a 0755 temp dir.
set -euo pipefail

: "${AIRLOCK:?AIRLOCK must name the airlock binary}"
# shellcheck source=tests/skips.sh
. "$(dirname "$0")/../skips.sh"
command -v python3 >/dev/null || al_skip_or_fail "${AL_CTEST:-check}" "python3 is missing"
AIRLOCK=$(readlink -f "$AIRLOCK")

TMP=$(mktemp -d /tmp/al-check.XXXXXX)
touch "$TMP/.airlock-test"
cleanup() { [ -f "$TMP/.airlock-test" ] && rm -rf --one-file-system -- "$TMP"; }
trap cleanup EXIT
chmod 0755 "$TMP"
cd "$TMP"

AS=()
if [ "${AL_TEST_MODE:-root}" = user ] && [ "$(id -u)" = 0 ]; then
	cp "$AIRLOCK" "$TMP/airlock"
	chmod 0755 "$TMP/airlock"
	AIRLOCK=$TMP/airlock
	AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
export AIRLOCK

fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- command line ---------------------------------------------------------------
"${AS[@]}" "$AIRLOCK" check --help | grep -q -- '--json' || fail "check --help does not mention --json"
rc=0
"${AS[@]}" "$AIRLOCK" check --bogus >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 125 ] || fail "check --bogus exited $rc, want 125"
grep -q '^airlock: ' "$TMP/err" || fail "check --bogus: no 'airlock:' message"

# ---- side effects: nothing the probes make (a tmpfs on /tmp, l/u/w/m dirs, an overlay
# on /tmp/m, all inside a child's own namespaces) may show up on the host. Only those
# names are compared: other tests may be using /tmp at the same time.
probe_traces() {
	awk '$5 == "/tmp" || $5 ~ "^/tmp/[luwm]$"' /proc/self/mountinfo
	ls -d /tmp/l /tmp/u /tmp/w /tmp/m 2>/dev/null || true
}
before=$(probe_traces)

"${AS[@]}" "$AIRLOCK" check >"$TMP/table" || fail "check exited $?"
"${AS[@]}" "$AIRLOCK" check --json >"$TMP/report.json" || fail "check --json exited $?"

[ "$(probe_traces)" = "$before" ] || fail "the probes left traces on the host: $(probe_traces)"
chmod 0644 "$TMP/table" "$TMP/report.json"

# ---- the report against independent facts (python runs as the same user) ---------
read -r -d '' PY <<'EOF' || true
import ctypes, json, os, shutil, subprocess, sys, time

report = json.load(open("report.json"))
table = open("table").read().splitlines()
errors = []

def check(cond, what):
    if not cond:
        errors.append(what)

def typed(obj, key, types, path):
    check(isinstance(obj, dict) and key in obj, f"{path}.{key} missing")
    if isinstance(obj, dict) and key in obj:
        check(isinstance(obj[key], types) and not (bool not in types and isinstance(obj[key], bool)),
              f"{path}.{key} is {type(obj[key]).__name__}")
        return obj[key]
    return None

def works(*argv):
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

def probe(obj, path):
    typed(obj, "ok", (bool,), path)
    typed(obj, "error", (str, type(None)), path)
    if isinstance(obj, dict):
        check((obj.get("error") is None) == bool(obj.get("ok")), f"{path}: error iff not ok")

root = os.geteuid() == 0
r = report
check(typed(r, "version", (int,), "") == 1, "version != 1")
check(typed(r, "kernel", (str,), "") == os.uname().release, "kernel != uname -r")
check(typed(r, "euid", (int,), "") == os.geteuid(), "euid wrong")

# user namespaces: as root (only when root) and unprivileged, against unshare(1)
u = typed(r, "user_namespaces", (dict,), "")
asr = typed(u, "as_root", (dict, type(None)), "user_namespaces")
nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if root else []
if root:
    probe(asr, "as_root")
    check(asr["ok"] == works("unshare", "--user", "true"), "as_root disagrees with unshare --user")
else:
    check(asr is None, "as_root should be null when not root")
up = typed(u, "unprivileged", (dict,), "user_namespaces")
probe(up, "unprivileged")
check(up.get("uid") == (65534 if root else os.geteuid()), "unprivileged.uid wrong")
check(up["ok"] == works(*nobody, "unshare", "--user", "true"), "unprivileged disagrees with unshare --user")
for k in ("max_user_namespaces", "unprivileged_userns_clone", "apparmor_restrict_unprivileged_userns"):
    typed(u, k, (int, type(None)), "user_namespaces")
mx = u["max_user_namespaces"]
check(mx == (int(open("/proc/sys/user/max_user_namespaces").read())
             if os.path.exists("/proc/sys/user/max_user_namespaces") else None), "max_user_namespaces wrong")
for tool in ("newuidmap", "newgidmap"):
    typed(u, tool, (str, type(None)), "user_namespaces")
    typed(u, tool + "_privileged", (bool,), "user_namespaces")
    check(u[tool] == shutil.which(tool), f"{tool} != which {tool}")

# every namespace type inside a new user namespace, against unshare(1)
flags = {"user": [], "pid": ["--pid"], "mount": ["--mount"], "net": ["--net"], "ipc": ["--ipc"],
         "uts": ["--uts"], "cgroup": ["--cgroup"], "time": ["--time"]}
ns = typed(r, "namespaces", (dict,), "")
check(sorted(ns) == sorted(flags), f"namespaces keys {sorted(ns)}")
for name, flag in flags.items():
    if name in ns:
        probe(ns[name], "namespaces." + name)
        check(ns[name]["ok"] == works("unshare", "--user", *flag, "true"), f"namespace {name} disagrees with unshare")

# landlock: the same version query through ctypes
ll = typed(r, "landlock", (dict,), "")
typed(ll, "abi", (int,), "landlock")
typed(ll, "error", (str, type(None)), "landlock")
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
abi = libc.syscall(ctypes.c_long(444), None, ctypes.c_long(0), ctypes.c_long(1))
check(ll["abi"] == max(abi, 0), f"landlock abi {ll['abi']} != {abi}")

# seccomp: the mode is inherited, so ours equals airlock's
sc = typed(r, "seccomp", (dict,), "")
typed(sc, "filter", (bool,), "seccomp")
typed(sc, "mode", (int, type(None)), "seccomp")
acts = typed(sc, "actions", (list,), "seccomp")
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
if "Seccomp" in status:
    check(sc["mode"] == int(status["Seccomp"]), "seccomp mode != /proc/self/status")
    check(sc["filter"] and "errno" in acts and "kill_process" in acts, "seccomp filter not reported")
else:
    check(not sc["filter"], "seccomp filter reported without kernel support")

# cgroups: the layout from the filesystem types, mounts and dirs from /proc/self/cgroup
def fstype(p):
    return subprocess.run(["stat", "-fc", "%T", p], capture_output=True, text=True).stdout.strip()
cg = typed(r, "cgroup", (dict,), "")
layout = typed(cg, "layout", (str,), "cgroup")
top = fstype("/sys/fs/cgroup")
if top == "cgroup2fs":
    check(layout == "v2", f"layout {layout}, /sys/fs/cgroup is cgroup2fs")
elif top == "tmpfs":
    want = "hybrid" if os.path.isdir("/sys/fs/cgroup/unified") and fstype("/sys/fs/cgroup/unified") == "cgroup2fs" else "v1"
    check(layout == want, f"layout {layout}, want {want}")
typed(cg, "error", (type(None),), "cgroup")
own = {}
for line in open("/proc/self/cgroup").read().splitlines():
    hid, ctrls, path = line.split(":", 2)
    for c in (ctrls.split(",") if ctrls else ["<v2>"]):
        own[c] = path
def check_hier(h, path, kind, key):
    typed(h, "mount", (str,), path)
    typed(h, "dir", (str, type(None)), path)
    typed(h, "writable", (bool,), path)
    check(fstype(h["mount"]) == kind, f"{path}.mount {h['mount']} is not {kind}")
    if h["dir"] is not None:
        check(os.path.isdir(h["dir"]), f"{path}.dir missing")
        check(h["writable"] == (os.access(h["dir"], os.W_OK, effective_ids=True) and
                                os.access(h["dir"] + "/cgroup.procs", os.W_OK, effective_ids=True)),
              f"{path}.writable wrong")
        if key in own:
            check(h["dir"].rstrip("/") == (h["mount"] + own[key]).rstrip("/"), f"{path}.dir {h['dir']} != mount+own")
v2 = typed(cg, "v2", (dict, type(None)), "cgroup")
check((v2 is not None) == (layout in ("v2", "hybrid")), "cgroup.v2 presence vs layout")
if v2:
    check_hier(v2, "cgroup.v2", "cgroup2fs", "<v2>")
    ctl = typed(v2, "controllers", (list,), "cgroup.v2")
    typed(v2, "subtree_control", (list,), "cgroup.v2")
    if v2["dir"]:
        check(ctl == open(v2["dir"] + "/cgroup.controllers").read().split(), "v2 controllers differ")
v1 = typed(cg, "v1", (dict,), "cgroup")
use = typed(cg, "use", (dict,), "cgroup")
for c in ("memory", "pids", "cpu", "cpuacct"):
    h = typed(v1, c, (dict, type(None)), "cgroup.v1")
    if h:
        check_hier(h, "cgroup.v1." + c, "cgroupfs", c)
    v = typed(use, c, (str, type(None)), "cgroup.use")
    check(v in ("v1", "v2", None), f"use.{c} = {v}")
    if v == "v1":
        check(h and h["writable"], f"use.{c}=v1 but not writable")
    if v == "v2":
        check(v2 and v2["writable"] and (c == "cpuacct" or c in v2["controllers"]), f"use.{c}=v2 but unusable")

# overlayfs: listed, and mountable in a user namespace, against unshare(1) + mount(8)
ov = typed(r, "overlayfs", (dict,), "")
listed = any(l.split("\t")[-1] == "overlay" for l in open("/proc/filesystems").read().splitlines())
check(typed(ov, "listed", (bool,), "overlayfs") == listed, "overlayfs.listed wrong")
typed(ov, "userns_mount", (bool,), "overlayfs")
if listed:
    script = ("mount -t tmpfs none /tmp && mkdir /tmp/l /tmp/u /tmp/w /tmp/m && "
              "mount -t overlay overlay -o lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w /tmp/m")
    check(ov["userns_mount"] == works("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script),
          "overlayfs.userns_mount disagrees with unshare + mount")

# /dev/kvm
kvm = typed(r, "kvm", (dict,), "")
present = os.path.exists("/dev/kvm")
check(typed(kvm, "present", (bool,), "kvm") == present, "kvm.present wrong")
check(typed(kvm, "usable", (bool,), "kvm") == (present and os.access("/dev/kvm", os.R_OK | os.W_OK)), "kvm.usable wrong")

# backends: the same PATH lookup as the shell's
be = typed(r, "backends", (dict,), "")
for b in ("bwrap", "runsc", "crun", "runc"):
    typed(be, b, (str, type(None)), "backends")
    check(be.get(b) == shutil.which(b), f"backends.{b} {be.get(b)} != which {shutil.which(b)}")

# the table says the same as the JSON
check(table[0].split() == ["feature", "status", "detail"], "table header")
def status(feature):
    line = next((l for l in table if l.startswith(feature + " ")), "")
    return line[len(feature):].split()[0] if line[len(feature):].split() else None
check(status("landlock") == ("yes" if ll["abi"] > 0 else "no"), "table landlock row")
check(status("cgroup layout") == layout, "table cgroup layout row")
check(status("backend bwrap") == ("yes" if be["bwrap"] else "no"), "table bwrap row")
check(status("namespace net") == ("yes" if ns["net"]["ok"] else "no"), "table net row")

# fast: the whole check well under a second (its budget is 300 ms)
t = time.monotonic()
subprocess.run([os.environ["AIRLOCK"], "check", "--json"], stdout=subprocess.DEVNULL, check=True)
ms = (time.monotonic() - t) * 1000
print(f"# airlock check took {ms:.0f} ms", file=sys.stderr)
check(ms < 1000, f"airlock check took {ms:.0f} ms")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
"${AS[@]}" env AIRLOCK="$AIRLOCK" python3 -c "$PY" || fail "report disagrees with the host (see above)"

# ---- an unavailable backend says what is missing: runsc needs root on this host (its gofer),
# not user namespaces, which the native backend uses in the same mode.
if [ "${AL_TEST_MODE:-root}" = user ] && [ -x /usr/bin/runsc ]; then
	row=$("${AS[@]}" "$AIRLOCK" check | grep '^gvisor can enforce') || fail "check lists no gvisor row"
	case "$row" in *" no "*"needs root"*) ;; *) fail "gvisor row as an ordinary user: $row" ;; esac
	"${AS[@]}" "$AIRLOCK" check | grep -q '^native can enforce  *yes' || fail "native is not available in user mode"
fi
echo "ok: airlock check (${AL_TEST_MODE:-root})"
