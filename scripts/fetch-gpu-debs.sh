#!/usr/bin/env bash
# Download, on this machine (Debian 12, with network), the packages that scripts/gpu-check.sh
# needs on the H200 machine, which has the CUDA toolkit, CMake and libjansson.so.4 but no
# jansson, xxhash or Criterion headers, no Criterion, and no network. They go to .gpu/debs/
# (git-ignored), which travels to that machine beside the working tree; gpu-check.sh unpacks
# them with `dpkg -x` into a private root, so nothing there is installed system-wide.
#
# Criterion's run-time closure is taken from apt-cache rather than written out by hand, so a
# change in Debian's dependencies is followed; glibc and libgcc are left out because every
# host has them, and gpu-check.sh uses a downloaded library only when the host lacks its soname.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.gpu/debs"
BUILD_PACKAGES=(libjansson-dev libjansson4 libxxhash-dev libcriterion-dev)
RUNTIME_ROOTS=(libcriterion3)
ALWAYS_ON_HOST='^(libc6|libgcc-s1|gcc-[0-9]+-base|debconf)$'

say() { printf 'fetch-gpu-debs: %s\n' "$*"; }

[ "$(dpkg --print-architecture)" = amd64 ] ||
    { echo "fetch-gpu-debs: the H200 machine is amd64; run this on an amd64 Debian" >&2; exit 1; }

closure() {
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances "$@" | grep -v '^[ <]' | sort -u
}

if ! apt-cache show libcriterion3 >/dev/null 2>&1; then
    say "apt-get update (package lists missing)"
    apt-get update -qq
fi

# What a local trial of gpu-check.sh leaves in .gpu (the unpacked root, its links, a kernel
# cache) would only make the carried folder bigger; the H200 machine rebuilds all of it.
rm -rf "$ROOT/.gpu/root" "$ROOT/.gpu/lib" "$ROOT/.gpu/cache"

mapfile -t runtime < <(closure "${RUNTIME_ROOTS[@]}" | grep -Ev "$ALWAYS_ON_HOST")
packages=("${BUILD_PACKAGES[@]}" "${runtime[@]}")
mkdir -p "$DEST"
cd "$DEST"
fetched=0
for p in "${packages[@]}"; do
    if compgen -G "${p}_*.deb" >/dev/null; then
        continue
    fi
    say "apt-get download $p"
    # As root apt warns that the download is unsandboxed; that is expected here.
    apt-get download -qq "$p" 2>&1 | grep -v 'unsandboxed' || true
    compgen -G "${p}_*.deb" >/dev/null || { echo "fetch-gpu-debs: failed to download $p" >&2; exit 1; }
    fetched=$((fetched + 1))
done
# The H200 machine receives the working tree without .git, or with the .git of an older commit;
# record which commit it is (and whether the tree had uncommitted changes) for the benchmarks'
# records.
if git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
    commit="$(git -C "$ROOT" rev-parse --short HEAD)"
    git -C "$ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
    echo "$commit" >"$ROOT/.gpu/commit"
    say "commit $commit recorded in .gpu/commit"
fi
say "$fetched downloaded, ${#packages[@]} in ${DEST#"$ROOT"/}: ${packages[*]}"
say "size: $(du -sh "$DEST" | cut -f1) (carry .gpu with the working tree)"
