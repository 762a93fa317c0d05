#!/usr/bin/env bash
# lint.sh — static analysis: cppcheck and clang-tidy (committed .clang-tidy, .cppcheck-suppress)
# over src/, tools/ and tests/probe/, with the compile flags of a configured build, and the layout
# of every C file git tracks against .clang-format. Exits non-zero on any finding; fix it
# (`clang-format -i FILE` for the layout), or silence it on its line with a reason:
#   // NOLINT(check): reason        (or NOLINTNEXTLINE on the line above)
#   // cppcheck-suppress id ; reason (on the line above)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${LINT_BUILD_DIR:-build-lint}
for tool in cppcheck clang-tidy clang-format; do
  command -v "$tool" >/dev/null 2>&1 || { echo "lint.sh: $tool is missing (scripts/deps.sh installs it)" >&2; exit 1; }
done

# Configuring (no build) is enough: it writes compile_commands.json with the project's flags.
cmake -S . -B "$dir" -DAIRLOCK_WERROR=ON >/dev/null
# Our sources only, each once (the generated seccomp tables are not written by us, and do not
# exist before a build): lint/compile_commands.json is the database both tools read.
mkdir -p "$dir/lint"
db=$dir/lint/compile_commands.json
mapfile -t files < <(python3 - "$dir/compile_commands.json" "$db" <<'PY'
import json, os, sys
seen, keep = set(), []
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(e["file"])
    if f.startswith(("src/", "tools/", "tests/probe/")) and f not in seen:
        seen.add(f)
        keep.append(e)
json.dump(keep, open(sys.argv[2], "w"), indent=1)
print("\n".join(sorted(seen)))
PY
)
((${#files[@]})) || { echo "lint.sh: no sources found in $db" >&2; exit 1; }

rc=0
mapfile -t cfiles < <(git ls-files '*.c' '*.h')
echo "lint.sh: clang-format (${#cfiles[@]} files)"
printf '%s\n' "${cfiles[@]}" | xargs -P"$(nproc)" -n16 clang-format --dry-run --Werror || rc=1

echo "lint.sh: cppcheck (${#files[@]} files)"
cppcheck --project="$db" \
  --enable=warning,portability,performance --inline-suppr --suppressions-list=.cppcheck-suppress \
  --error-exitcode=1 --quiet -j"$(nproc)" \
  --template='{file}:{line}: {severity}: {message} [{id}]' || rc=1

echo "lint.sh: clang-tidy (${#files[@]} files)"
# One file per process, in parallel; .clang-tidy makes every finding an error (non-zero exit).
printf '%s\n' "${files[@]}" |
  xargs -P"$(nproc)" -n1 clang-tidy -p "$dir/lint" --quiet 2> >(grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|NOLINT\), [0-9]+ with check filters\)\.$' >&2) || rc=1

if ((rc)); then
  echo "lint.sh: FAILED (see the findings above)" >&2
  exit 1
fi
echo "lint.sh: no findings"
