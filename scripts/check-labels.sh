#!/usr/bin/env bash
# Fails when the sources or docs name a label that only means something outside the
# repository: an issue, finding, defect or item number ("issue 8", "finding 3", "item 2") or a
# defect code ("D8"). A reader of the code cannot look those up; a comment or a doc says the
# reason itself, or links a section of docs/.
#
#   scripts/check-labels.sh [--self-test] [PATH...]
#
# PATHs are files or folders relative to the repository root; without any, every source and
# documentation folder. --self-test only checks the patterns against lines that must and must
# not match. Exit status: 0 nothing found, 1 a label found (each printed as file:line:text),
# 2 a usage error, or a grep without -P (which would find nothing and pass).
#
# A defect code is D and digits as a word. Two upper-case hex digits on either side make it a
# byte of a hex dump (docs/hardware-facts.md quotes "68 D0 63"), not a code.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORDS='\b(issue|finding|defect|item)s?[ -]?#?[0-9]+'
CODES='(?<!\b[0-9A-F]{2} )\bD[0-9]+\b(?! [0-9A-F]{2}\b)'
DEFAULT_PATHS=(api jit cache kernel_src include tests scripts bench docs python examples cmake .ci
               README.md CHANGELOG.md CMakeLists.txt)
export LC_ALL=C # [0-9A-F] is upper case only; some locales' ranges take in lower case too

# grep over stdin or PATHs with both patterns; binary files, fuzz corpora (inputs, not prose)
# and this script (which spells the patterns out) are skipped.
find_labels() {
    local opts=(-nIP --exclude-dir=corpus --exclude=check-labels.sh) hits
    if [ $# -gt 0 ]; then
        hits=$({ grep "${opts[@]}" -rH -i -e "$WORDS" "$@"
                 grep "${opts[@]}" -rH -e "$CODES" "$@"; })
    else
        local text
        text=$(cat) # both greps read it
        hits=$({ printf '%s\n' "$text" | grep "${opts[@]}" -i -e "$WORDS"
                 printf '%s\n' "$text" | grep "${opts[@]}" -e "$CODES"; })
    fi
    [ -n "$hits" ] || return 1
    printf '%s\n' "$hits" | sort -t: -k1,1 -k2,2n -u # a line both patterns hit, once
}

self_test() {
    local bad=0 line
    local must=('Defects found by fault injection (issue 8), each pinned'
                '(issue 10, finding 1). The kernel re-checks'
                'Issue 10, finding 4 (pad).' 'the issue-3 formats are opt-in' 'see item 2'
                '/* ---- D1: verify reports manifest damage' '(issue 8, D2 and D9)')
    local must_not=('bytes `B4 72 68 D0 63 29 4F E0`' '5D 59 D6 74 47 DE'
                    '- C/D: d0, d1 row g, columns 2t, 2t+1' 'the issued instructions'
                    'D[M, N] = A . B^T' 'an F19 worked block' 'a 4D tensor map')
    for line in "${must[@]}"; do
        if ! printf '%s\n' "$line" | find_labels >/dev/null; then
            echo "check-labels: self-test: not found in: $line" >&2
            bad=1
        fi
    done
    for line in "${must_not[@]}"; do
        if printf '%s\n' "$line" | find_labels >/dev/null; then
            echo "check-labels: self-test: wrongly found in: $line" >&2
            bad=1
        fi
    done
    return $bad
}

if ! echo x | grep -qP 'x' 2>/dev/null; then
    echo "check-labels: this grep has no -P (PCRE); the check cannot run" >&2
    exit 2
fi
paths=()
for arg in "$@"; do
    case "$arg" in
    --self-test)
        self_test && echo "check-labels: self-test passed"
        exit $? ;;
    -h | --help) sed -n 2,15p "$0"; exit 0 ;;
    -*) echo "check-labels: unknown option $arg" >&2; exit 2 ;;
    *) paths+=("$arg") ;;
    esac
done
self_test || exit 2
cd "$ROOT" || exit 2
if [ ${#paths[@]} -eq 0 ]; then
    for p in "${DEFAULT_PATHS[@]}"; do
        [ -e "$p" ] && paths+=("$p")
    done
else
    for p in "${paths[@]}"; do
        [ -e "$p" ] || { echo "check-labels: no such file or folder: $p" >&2; exit 2; }
    done
fi
if find_labels "${paths[@]}"; then
    echo "check-labels: labels from outside the repository found above; say the reason" \
         "instead, or link a section of docs/" >&2
    exit 1
fi
echo "check-labels: no outside labels in ${paths[*]}"
