#!/usr/bin/env bash
# gen-backends-doc.sh — regenerate the table of docs/backends.md between
#   <!-- BEGIN generated: airlock check --json -->  and  <!-- END generated -->
# from `airlock check --json` (its backend_layers); the prose outside the markers is kept.
#
# Usage: scripts/gen-backends-doc.sh [--check] [--airlock BIN | --json FILE] [--doc FILE]
#   --check    change nothing; exit 1 (printing a diff) if the file would change
#   --airlock  the binary whose `check --json` is read (default: build/airlock)
#   --json     read this saved `airlock check --json` output instead
#   --doc      the document (default: docs/backends.md)
#
# The table says what each backend CAN enforce, not what this machine has, so that it is the
# same wherever it is made. A cell is decided only where this machine can tell:
#   yes    the backend enforces the layer here;
#   no     the backend is available here, some backend enforces the layer here (so the host
#          offers it), and this one does not: the backend itself cannot;
# otherwise (the backend is not available here, or no backend enforces the layer here, i.e.
# the host lacks it) the cell is kept as the document has it, or "?" for a new row/column.
# Availability, paths and versions are never written: they belong to `airlock check` on each
# host. So --check on any machine compares only what that machine can tell.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0 airlock="$root/build/airlock" json="" doc="$root/docs/backends.md"
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=1 ;;
	--airlock) airlock=$2; shift ;;
	--json) json=$2; shift ;;
	--doc) doc=$2; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "gen-backends-doc.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ -f "$doc" ] || { echo "gen-backends-doc.sh: no $doc" >&2; exit 2; }
if [ -z "$json" ]; then
	[ -x "$airlock" ] || { echo "gen-backends-doc.sh: $airlock is not built (or give --airlock/--json)" >&2; exit 2; }
	tmp=$(mktemp -d)
	trap 'rm -rf -- "$tmp"' EXIT
	json=$tmp/check.json
	"$airlock" check --json >"$json"
fi

python3 - "$json" "$doc" "$check" <<'PY'
import difflib, json, re, sys

check_json, doc_path, check_only = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
BEGIN = "<!-- BEGIN generated: airlock check --json -->"
END = "<!-- END generated -->"
BACKENDS = ["native", "bwrap", "gvisor", "oci"]
NOT_LAYERS = {"available", "path", "version", "runtime", "error"}
# What each backend_layers key means (a key missing here is shown as itself).
LABELS = {
    "userns": "user namespace",
    "pidns": "pid namespace",
    "mntns": "mount namespace",
    "netns": "network namespace",
    "ipcns": "ipc namespace",
    "utsns": "uts namespace",
    "cgroupns": "cgroup namespace",
    "seccomp": "seccomp filter",
    "landlock": "Landlock",
    "cgroup_limits": "cgroup memory / pids / cpu limits",
    "pids_limit": "pids limit on the payload's processes",
    "no_new_privs": "no_new_privs",
    "caps": "no capabilities",
    "disk_cap": "size-capped `/tmp`, `/workspace`",
    "egress_proxy": "egress proxy (`--net allow=`, `--broker`)",
    "checkout_copy": "`--checkout-mode copy`, `--keep-changes`",
    "workdir_overlay": "`--workdir` behind an overlay capped by `--disk`",
}

report = json.load(open(check_json))
bl = report.get("backend_layers") or {}
if not isinstance(bl.get("native"), dict):
    sys.exit("gen-backends-doc.sh: no backend_layers.native in %s" % check_json)
text = open(doc_path).read()
if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
    sys.exit("gen-backends-doc.sh: %s needs exactly one '%s' ... '%s' pair" % (doc_path, BEGIN, END))
head, rest = text.split(BEGIN, 1)
old, tail = rest.split(END, 1)

# The cells the document has now: {(layer, backend): cell}, and its row order.
old_cells, old_rows = {}, []
cols = None
for line in old.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
    if not cells or set("".join(cells)) <= set("-: "):
        continue
    if cells[0] == "layer (`backend_layers` key)":
        cols = cells[1:]
        continue
    m = re.search(r"\(`([a-z0-9_]+)`\)$", cells[0])
    if cols and m:
        old_rows.append(m.group(1))
        for b, c in zip(cols, cells[1:]):
            old_cells[(m.group(1), b)] = c

# Rows: the layers check knows (in its order), then any the document has that check does not.
rows = [k for b in BACKENDS for k in (bl.get(b) or {}) if k not in NOT_LAYERS]
rows = list(dict.fromkeys(rows + old_rows))
avail = {b: isinstance(bl.get(b), dict) and bl[b].get("available") is True for b in BACKENDS}
decided = 0

def cell(layer, b):
    global decided
    offered = any(avail[x] and bl[x].get(layer) is True for x in BACKENDS)
    if avail[b] and layer in bl[b] and offered:
        decided += 1
        return "yes" if bl[b][layer] is True else "**no**"
    return old_cells.get((layer, b), "?")

out = ["", "| layer (`backend_layers` key) | " + " | ".join(BACKENDS) + " |",
       "|---|" + "|".join([":---:"] * len(BACKENDS)) + "|"]
for layer in rows:
    out.append("| %s (`%s`) | %s |" % (LABELS.get(layer, layer), layer,
                                       " | ".join(cell(layer, b) for b in BACKENDS)))
out.append("")
new = head + BEGIN + "\n".join(out) + "\n" + END + tail
tell = ", ".join(b for b in BACKENDS if avail[b]) or "none"
print("gen-backends-doc.sh: %d cells decided by this host (available here: %s)" % (decided, tell), file=sys.stderr)
if new == text:
    sys.exit(0)
if check_only:
    sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), doc_path + " (now)",
                                               doc_path + " (as airlock check says)"))
    sys.exit("gen-backends-doc.sh: %s is out of date: run scripts/gen-backends-doc.sh" % doc_path)
open(doc_path, "w").write(new)
print("gen-backends-doc.sh: rewrote the table of %s" % doc_path, file=sys.stderr)
PY
