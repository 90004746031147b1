#!/usr/bin/env bash
# Fault injection on the kernel cache (docs/testing.md): every class of damage a cache directory
# can suffer, and entries that are no damage at all (built by another NVRTC or another jitgemm
# version, which other hosts serve), applied one at a time to a copy of a small real cache. For
# each class:
#
#   1. `jitgemm cache verify` reports it (exit 1, and a line naming the problem) and changes
#      nothing: a hash of the whole tree (names, types, modes, owners, sizes, mtimes, link
#      targets, contents) is the same before and after;
#   2. `jitgemm cache gc` repairs it: verify is clean afterwards;
#   3. no valid cubin is lost and no corrupt one is kept: every entry the class did not damage
#      is still there with its original bytes, and a damaged entry is either gone or whole;
#   4. (without --quick) the next load serves nothing corrupt: a prewarm of the same list exits
#      0, finds every undamaged kernel "cached", recompiles what gc removed, and afterwards every
#      cubin is byte for byte the one first compiled.
#
#   scripts/cache-faults.sh [--quick] [--jitgemm PATH] [--only CLASS] [--list] [--keep]
#
# Exit status: 0 every class passed, 1 some class failed (each failure is printed), 2 usage or
# set-up error. Needs to run as a user who can chown (the foreign-owner classes are skipped
# otherwise, and say so).
set -u

here=$(cd "$(dirname "$0")" && pwd)
jitgemm="$here/../build/jitgemm"
quick=0 only="" keep=0 list_only=0
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --jitgemm) jitgemm="$2"; shift ;;
    --only) only="$2"; shift ;;
    --keep) keep=1 ;;
    --list) list_only=1 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cache-faults: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# ---- the classes ------------------------------------------------------------------------------
# Each fault_<class> damages the cache in $W. It may set:
#   victims   hashes whose entry the damage may cost (gc may remove them; they are recompiled)
#   want_rc   verify's expected exit status (1 unless the damage is documented as invisible)
#   want      an extended regex verify's output must match
# $E and $F are the hashes of two entries, $X a directory outside the cache.

old() { touch -h -d '-5 minutes' "$@"; } # older than gc's one-minute grace for files in flight
json_edit() { # json_edit FILE PYTHON-EXPRESSION-ON-d : rewrite a JSON file, keeping its inode
    python3 - "$1" "$2" <<'EOF'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
with open(path) as f:
    d = json.load(f)
exec(expr)
with open(path, "w") as f:
    json.dump(d, f, indent=1)
EOF
}
foreign() { chown 4242:4242 "$1"; }
link_out() { mv "$1" "$X/$(basename "$1")" && ln -s "$X/$(basename "$1")" "$1"; }
flip_bit() { # flip one bit in the middle of a file
    python3 - "$1" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x10
open(p, "r+b").write(b)
EOF
}
cut_half() { truncate -s $(($(stat -c %s "$1") / 2)) "$1"; }

M=manifest.json J=manifest.journal
fault_manifest_garbage() { echo 'garbage, not JSON' >"$W/$M"; want='manifest.json.*unusable'; }
fault_manifest_empty() { : >"$W/$M"; want='manifest.json.*unusable'; }
fault_manifest_truncated() { cut_half "$W/$M"; want='manifest.json.*unusable'; }
fault_manifest_not_an_object() { echo '[1, 2]' >"$W/$M"; want='manifest.json.*unusable'; }
fault_manifest_other_format() { json_edit "$W/$M" 'd["format"] = 2'; want='format'; }
fault_manifest_entries_not_an_object() { json_edit "$W/$M" 'd["entries"] = []'; want='entries'; }
fault_manifest_negative_size() {
    json_edit "$W/$M" "d['entries']['$E']['size'] = -1"
    want='manifest.json.*(size|range)'
}
fault_manifest_wrong_type() {
    json_edit "$W/$M" "d['entries']['$E']['registers'] = 'many'"
    want='manifest.json.*registers'
}
fault_manifest_path_traversal_key() {
    json_edit "$W/$M" "d['entries']['../../etc/passwd'] = d['entries'].pop('$E')"
    want='manifest.json.*unusable'
}
fault_manifest_hash_field_differs() {
    json_edit "$W/$M" "d['entries']['$E']['hash'] = '$F'"
    want='manifest.json.*unusable'
}
fault_manifest_duplicate_name() {
    python3 - "$W/$M" "$E" <<'EOF'
import sys
p, h = sys.argv[1], sys.argv[2]
t = open(p).read()
at = t.index('"%s": {' % h)
end = t.index("\n  }", at) + 4
open(p, "w").write(t[:end] + ",\n  " + t[at:end].lstrip() + t[end:])
EOF
    want='manifest.json.*unusable'
}
fault_manifest_symlink() { link_out "$W/$M"; want='manifest.json.*(link|refused)'; }
fault_manifest_foreign_owner() { foreign "$W/$M"; want='manifest.json.*(owned|refused)'; }
fault_manifest_mode_0666() { chmod 0666 "$W/$M"; want='manifest.json.*(writable|refused)'; }
fault_manifest_missing() { rm "$W/$M"; want='manifest.json.*missing'; }
fault_manifest_directory() { rm "$W/$M" && mkdir "$W/$M" && echo x >"$W/$M/inside"; want='manifest.json'; }
fault_index_phantom_entry() {
    json_edit "$W/$M" "d['entries']['0123456789abcdef0123456789abcdef'] = dict(d['entries']['$E'], hash='0123456789abcdef0123456789abcdef')"
    want='manifest entry without files'
}
fault_index_missing_entry() { json_edit "$W/$M" "d['entries'].pop('$E')"; want='files without manifest entry'; }
fault_index_entry_differs() {
    json_edit "$W/$M" "d['entries']['$E']['kernel_name'] = 'renamed'"
    want='differs from the sidecar'
}
fault_index_size_drift() {
    json_edit "$W/$M" "d['entries']['$E']['size'] += 1"
    want='differs from the sidecar'
}

fault_journal_torn() { printf '{"put": {"hash": "%s"' "$E" >>"$W/$J"; want='journal torn'; }
fault_journal_garbage_line() { echo 'garbage' >>"$W/$J"; want='journal unusable'; }
fault_journal_empty_line() { echo >>"$W/$J"; want='journal unusable'; }
fault_journal_bad_put() {
    python3 - "$W/kernels/$E.json" >>"$W/$J" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
e["size"] = -5
print(json.dumps({"put": e, "usage": 1}, separators=(",", ":")))
EOF
    want='journal unusable'
}
fault_journal_symlink() { link_out "$W/$J"; want='journal.*(link|refused)'; }
fault_journal_foreign_owner() { foreign "$W/$J"; want='journal.*(owned|refused)'; }
fault_journal_mode_0666() { chmod 0666 "$W/$J"; want='journal.*(writable|refused)'; }
fault_journal_directory() { rm "$W/$J" && mkdir "$W/$J"; want='journal'; }

S() { echo "$W/kernels/$E.json"; }
C() { echo "$W/kernels/$E.cubin"; }
fault_sidecar_garbage() { echo 'not json' >"$(S)"; victims=$E; want="$E.*unparsable"; }
fault_sidecar_empty() { : >"$(S)"; victims=$E; want="$E.*unparsable"; }
fault_sidecar_truncated() { cut_half "$(S)"; victims=$E; want="$E.*unparsable"; }
fault_sidecar_other_hash() { json_edit "$(S)" "d['hash'] = '$F'"; victims=$E; want="$E"; }
fault_sidecar_negative_size() { json_edit "$(S)" "d['size'] = -1"; victims=$E; want="$E"; }
fault_sidecar_wrong_size() { json_edit "$(S)" "d['size'] += 1"; victims=$E; want="$E.*size"; }
fault_sidecar_wrong_checksum() {
    json_edit "$(S)" "d['checksum'] = d['checksum'][::-1]"
    victims=$E want="$E.*checksum"
}
fault_sidecar_symlink() { link_out "$(S)"; victims=$E; want="$E.*(link|refused)"; }
fault_sidecar_foreign_owner() { foreign "$(S)"; victims=$E; want="$E.*(owned|refused)"; }
fault_sidecar_mode_0666() { chmod 0666 "$(S)"; victims=$E; want="$E.*(writable|refused)"; }
fault_sidecar_missing() { rm "$(S)" && old "$W/kernels/$E".*; victims=$E; want='orphan'; }
fault_sidecar_directory() { rm "$(S)" && mkdir "$(S)" && old "$(S)" "$W/kernels/$E".*; victims=$E; want='unexpected directory'; }

fault_cubin_truncated() { cut_half "$(C)"; victims=$E; want="$E.*size"; }
fault_cubin_empty() { : >"$(C)"; victims=$E; want="$E.*size"; }
fault_cubin_bit_flip() { flip_bit "$(C)"; victims=$E; want="$E.*checksum"; }
fault_cubin_appended() { echo x >>"$(C)"; victims=$E; want="$E.*size"; }
fault_cubin_missing() { rm "$(C)"; victims=$E; want="$E.*missing cubin"; }
fault_cubin_symlink() { link_out "$(C)"; victims=$E; want="$E.*(link|refused)"; }
fault_cubin_foreign_owner() { foreign "$(C)"; victims=$E; want="$E.*(owned|refused)"; }
fault_cubin_mode_0666() { chmod 0666 "$(C)"; victims=$E; want="$E.*(writable|refused)"; }
fault_cubin_directory() { rm "$(C)" && mkdir "$(C)" && old "$(C)"; victims=$E; want='unexpected directory'; }
fault_cubins_swapped() {
    mv "$(C)" "$X/swap" && mv "$W/kernels/$F.cubin" "$(C)" && mv "$X/swap" "$W/kernels/$F.cubin"
    victims="$E $F" want="$E.*(size|checksum)"
}
fault_cubin_of_other_entry() { cp -p "$W/kernels/$F.cubin" "$(C)"; victims=$E; want="$E.*(size|checksum)"; }

fault_stray_file_in_kernels() { echo notes >"$W/kernels/notes.txt" && old "$W/kernels/notes.txt"; want='unexpected file'; }
fault_stray_subdirectory_in_kernels() {
    mkdir -p "$W/kernels/sub/deeper" && echo x >"$W/kernels/sub/deeper/f" &&
        ln -s "$X" "$W/kernels/sub/link" && old "$W/kernels/sub"
    want='unexpected directory'
}
fault_stray_symlink_in_kernels() { ln -s "$X" "$W/kernels/elsewhere" && old "$W/kernels/elsewhere"; want='unexpected file'; }
fault_orphan_source() {
    cp -p "$W/kernels/$E.cu" "$W/kernels/fedcba9876543210fedcba9876543210.cu" &&
        old "$W/kernels/fedcba9876543210fedcba9876543210.cu"
    want='orphan'
}
fault_orphan_cubin() {
    cp -p "$(C)" "$W/kernels/fedcba9876543210fedcba9876543210.cubin" &&
        old "$W/kernels/fedcba9876543210fedcba9876543210.cubin"
    want='orphan'
}
# Documented as invisible to verify (it checks kernels/ and the index only); gc still cleans.
fault_stale_temporary() { echo partial >"$W/tmp/999.1.$E.cubin" && old "$W/tmp/999.1.$E.cubin"; want_rc=0; }
fault_stale_lock_file() { : >"$W/locks/fedcba9876543210fedcba9876543210.lock"; want_rc=0; }

# No damage: valid entries that a host with another NVRTC, or still running another jitgemm
# version, is served. Sidecar and manifest agree, so verify is clean, and gc must keep them:
# with no victims, losing one fails the class.
other_build() { # other_build PYTHON-EXPRESSION-ON-e : the same edit to E's sidecar and index entry
    json_edit "$(S)" "e = d; $1" && json_edit "$W/$M" "e = d['entries']['$E']; $1"
    want_rc=0
}
fault_valid_other_nvrtc() { other_build "e['toolchain'] = {'nvrtc': '12.8', 'nvjitlink': '12.8'}"; }
fault_valid_other_device_code() { other_build "e['device_hash'] = '0123456789abcdef0123456789abcdef'"; }
fault_valid_other_key_format() { other_build "e['generator_version'] = 4"; }

classes=$(declare -F | sed -n 's/^declare -f fault_//p')
if [ "$list_only" = 1 ]; then
    echo "$classes"
    exit 0
fi
[ -n "$only" ] && classes=$only

# ---- set-up ----------------------------------------------------------------------------------
if [ ! -x "$jitgemm" ]; then
    echo "cache-faults: no jitgemm at $jitgemm (build first, or give --jitgemm)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/jitgemm-cache-faults-XXXXXX")
cleanup() { [ "$keep" = 1 ] && echo "cache-faults: kept $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
unset JITGEMM_CACHE_DIR JITGEMM_CACHE_MAX_BYTES
cat >"$work/shapes.json" <<'EOF'
{"target": {"arch": "sm_90a", "sm_count": 132}, "gemms": [
  {"name": "proj", "op": "linear", "n": 256, "k": 128, "tokens": [1, 300]},
  {"name": "up", "op": "linear_swiglu", "n": 256, "k": 128, "tokens": [1]}
]}
EOF
base="$work/base"
if ! "$jitgemm" prewarm "$work/shapes.json" --cache-dir "$base" --jobs 2 >"$work/base.log" 2>&1; then
    echo "cache-faults: building the base cache failed:" >&2
    cat "$work/base.log" >&2
    exit 2
fi
hashes=$(cd "$base/kernels" && ls ./*.json | sed 's|^\./||; s|\.json$||')
set -- $hashes
if [ $# -lt 3 ]; then
    echo "cache-faults: the base cache holds $# entries, want 3" >&2
    exit 2
fi
E=$1 F=$2
declare -A base_sha
for h in $hashes; do base_sha[$h]=$(sha256sum <"$base/kernels/$h.cubin"); done
if ! "$jitgemm" cache verify --cache-dir "$base" >"$work/base-verify.log" 2>&1; then
    echo "cache-faults: the base cache does not verify clean:" >&2
    cat "$work/base-verify.log" >&2
    exit 2
fi
can_chown=1
touch "$work/probe" && chown 4242:4242 "$work/probe" 2>/dev/null || can_chown=0

tree_hash() { # everything about a directory tree that a read-only command must leave alone
    (
        cd "$1" || exit 1
        find . -printf '%P|%y|%m|%U|%G|%s|%T@|%l\n' | LC_ALL=C sort
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    ) | sha256sum
}

# ---- one class -------------------------------------------------------------------------------
failures=0 passed=0 skipped=0
fail() {
    echo "FAIL $class: $*"
    failed=1
}

run_class() {
    class=$1 failed=0
    victims="" want_rc=1 want=""
    case "$class" in *foreign_owner*)
        if [ "$can_chown" = 0 ]; then
            echo "skip $class: cannot chown here"
            skipped=$((skipped + 1))
            return
        fi
        ;;
    esac
    W="$work/$class" X="$work/$class.outside"
    rm -rf "$W" "$X"
    cp -a "$base" "$W" && mkdir -p "$X"
    if ! "fault_$class"; then
        fail "the damage could not be applied"
        failures=$((failures + 1))
        return
    fi

    local before after out rc
    before=$(tree_hash "$W")
    out=$("$jitgemm" cache verify --cache-dir "$W" 2>&1)
    rc=$?
    after=$(tree_hash "$W")
    [ "$rc" = "$want_rc" ] || fail "verify exited $rc, want $want_rc: $out"
    [ -z "$want" ] || echo "$out" | grep -Eq -- "$want" || fail "verify did not report /$want/: $out"
    [ "$before" = "$after" ] || fail "verify changed the cache"

    out=$("$jitgemm" cache gc --cache-dir "$W" 2>&1) || fail "gc failed: $out"
    out=$("$jitgemm" cache verify --cache-dir "$W" 2>&1) || fail "verify after gc is not clean: $out"
    for h in $hashes; do
        local cubin="$W/kernels/$h.cubin"
        if [ -e "$W/kernels/$h.json" ]; then
            if [ ! -f "$cubin" ] || [ -L "$cubin" ] || [ "$(sha256sum <"$cubin")" != "${base_sha[$h]}" ]; then
                fail "after gc, entry $h is kept with a cubin that is not the one compiled"
            fi
        elif [[ " $victims " != *" $h "* ]]; then
            fail "gc lost entry $h, which the damage did not touch"
        fi
    done

    if [ "$quick" = 0 ]; then
        out=$("$jitgemm" prewarm "$work/shapes.json" --cache-dir "$W" --json --jobs 1 2>"$W.err")
        rc=$?
        [ "$rc" = 0 ] || fail "prewarm after gc exited $rc: $(cat "$W.err")"
        for h in $hashes; do
            local line
            line=$(echo "$out" | grep "\"key\": *\"$h\"")
            if [ -z "$line" ]; then
                fail "prewarm did not report key $h: $out"
            elif [[ " $victims " != *" $h "* ]] && ! echo "$line" | grep -q '"status": *"cached"'; then
                fail "prewarm did not find the undamaged entry $h cached: $line"
            fi
            if [ "$(sha256sum <"$W/kernels/$h.cubin" 2>/dev/null)" != "${base_sha[$h]}" ]; then
                fail "after the prewarm, $h's cubin differs from the one first compiled"
            fi
        done
        out=$("$jitgemm" cache verify --cache-dir "$W" 2>&1) || fail "verify after the prewarm: $out"
    fi
    if [ "$failed" = 0 ]; then
        passed=$((passed + 1))
        echo "ok   $class"
        rm -rf "$W" "$X" "$W.err"
    else
        failures=$((failures + 1))
    fi
}

for class in $classes; do
    if ! declare -F "fault_$class" >/dev/null; then
        echo "cache-faults: no class '$class' (see --list)" >&2
        exit 2
    fi
    run_class "$class"
done
total=$((passed + failures + skipped))
echo "cache-faults: $total classes: $passed passed, $failures failed, $skipped skipped$([ "$quick" = 1 ] && echo ' (quick: no prewarm after the repair)')"
[ "$failures" = 0 ]
