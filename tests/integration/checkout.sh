#!/bin/bash
# checkout.sh — checkout views: read-only (writes fail), and a throwaway read-write copy that
# never changes the source tree (hashed before and after), is gone afterwards (also after a
# timeout), and whose changes can be exported with --keep-changes.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
tree_hash() { (cd "$1" && find . -printf '%p %m %s %T@ %y\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum; }

src=$(al_tmpdir)
mkdir -p "$src/pkg/sub"
printf 'print("hi")\n' >"$src/main.py"
printf 'data\n' >"$src/pkg/sub/data.txt"
ln -s main.py "$src/link.py"
chmod -R a+rX "$src"
before=$(tree_hash "$src")

# ---- read-only: visible, every write fails, the source is untouched
al_run run --json --checkout "$src" -- sh -c '
cat /workspace/src/main.py
for f in /workspace/src/main.py /workspace/src/new.txt /workspace/src/pkg/sub/x; do
  if (echo x >"$f") 2>/dev/null; then echo "wrote $f"; fi
done
rm /workspace/src/main.py 2>/dev/null && echo removed
mv /workspace/src/pkg /workspace/src/pkg2 2>/dev/null && echo renamed
echo done'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'print("hi")\ndone')" "read-only checkout: readable, no write succeeded"
al_assert_eq "$(tree_hash "$src")" "$before" "source tree after the read-only run"
al_pass "read-only checkout: readable, unwritable, unchanged"

# ---- copy: writable inside, the source never changes
al_run run --json --checkout-mode copy --checkout "$src:/work/repo" -- sh -c '
cd /work/repo && echo changed >main.py && rm pkg/sub/data.txt && mkdir new && echo n >new/file && rm link.py &&
cat main.py new/file && ls pkg/sub | wc -l'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'changed\nn\n0')" "the job's view of its copy"
al_assert_eq "$(tree_hash "$src")" "$before" "source tree after the copy run"
al_pass "copy: read-write inside, the source tree unchanged"

# ---- the copy is gone afterwards: a second run sees the original, and nothing is left on the host
al_run run --checkout-mode copy --checkout "$src" -- cat /workspace/src/main.py
al_assert_eq "$AL_OUT" 'print("hi")' "a fresh copy for the next job"
al_pass "every job gets a fresh copy"

# ---- also after a timeout: a job that fills its copy and is killed leaves the source as it was
al_run run --json --time 1s --checkout-mode copy --checkout "$src" -- sh -c \
	'echo t >/workspace/src/main.py; dd if=/dev/zero of=/workspace/src/big bs=1M count=20 2>/dev/null; sleep 30'
al_assert_eq "$(j status)" timeout "status of the killed job"
al_assert_eq "$(tree_hash "$src")" "$before" "source tree after a timeout"
al_pass "timeout: nothing of the copy reaches the source"

# ---- --keep-changes exports exactly what changed
out="$(al_tmpdir 0777)/changes"
al_run run --json --checkout-mode copy --checkout "$src" --keep-changes "$out" -- sh -c \
	'cd /workspace/src && echo changed >main.py && rm pkg/sub/data.txt && mkdir -p new && echo n >new/file'
al_assert_rc 0
al_assert_eq "$(cat "$out/main.py")" changed "exported changed file"
al_assert_eq "$(cat "$out/new/file")" n "exported new file"
[ ! -e "$out/pkg/sub/data.txt" ] || al_fail "a deleted file was exported"
al_assert_eq "$(j changes.deleted)" 1 "deletions counted"
al_assert_eq "$(j changes.files)" 2 "files exported"
al_assert_eq "$(j changes.error)" null "export error"
al_assert_eq "$(tree_hash "$src")" "$before" "source tree after --keep-changes"
al_pass "--keep-changes exports the changed files as a tree"

# ---- bad input: exit 125, nothing run, nothing written
al_run run --checkout "$src/missing" -- /bin/true
al_assert_rc 125
al_run run --checkout "$src/main.py" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "not a directory" "a file as checkout"
al_run run --checkout "$src:relative" -- /bin/true
al_assert_rc 125
al_run run --checkout-mode sideways --checkout "$src" -- /bin/true
al_assert_rc 125
al_run run --checkout "$src" --keep-changes "$out" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "not empty" "--keep-changes into a non-empty directory"
al_run run --checkout "$src" --keep-changes "$(al_tmpdir)/x" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--checkout-mode copy" "--keep-changes with a read-only checkout"
al_assert_eq "$(tree_hash "$src")" "$before" "source tree after the refusals"
al_pass "bad checkout input is refused with 125"
