#!/usr/bin/env bash
# Installs a build into a temporary prefix and uses it the ways a consumer would: CMake's
# find_package (shared and static), pkg-config (shared and static), and the installed CLI, which
# must find a toolkit put beside the install and never one at a build-tree path.
#
#   check_install.sh BUILD_DIR SOURCE_DIR VERSION LIBDIR DEPS_DIR
set -euo pipefail

build=$1 src=$2 version=$3 libdir=$4 deps=$5
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
    echo "check_install: FAIL: $*" >&2
    exit 1
}
step() { echo "check_install: $*"; }

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || {
    cat "$work/install.log"
    fail "cmake --install failed"
}
for f in "$libdir/libjitgemm.so.${version%%.*}" "$libdir/libjitgemm.so" "$libdir/libjitgemm.a" \
    include/jitgemm.h bin/jitgemm "$libdir/cmake/jitgemm/jitgemmConfig.cmake" \
    "$libdir/cmake/jitgemm/jitgemmConfigVersion.cmake" "$libdir/pkgconfig/jitgemm.pc"; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# The public header is the whole interface: none of the library's internal headers may be
# installed beside it.
headers=$(cd "$prefix/include" && echo *)
[ "$headers" = "jitgemm.h" ] || fail "include/ holds '$headers', not jitgemm.h alone"
soname=$(readelf -d "$prefix/$libdir/libjitgemm.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libjitgemm.so.${version%%.*}" ] || fail "SONAME is '$soname'"

# An installed binary must not know where it was built: its read-only data may not hold the
# build or source tree's paths (debug info may; it is not read at run time).
for bin in "$prefix/$libdir/libjitgemm.so" "$prefix/bin/jitgemm"; do
    objcopy -O binary --only-section=.rodata "$bin" "$work/rodata"
    for p in "$(cd "$build" && pwd -P)" "$(cd "$src" && pwd -P)" "$deps"; do
        if grep -aqF "$p" "$work/rodata"; then fail "$bin holds the path $p"; fi
    done
done

mkdir "$work/cache"
for kind in shared static; do
    step "find_package consumer, $kind"
    use_static=OFF
    [ $kind = static ] && use_static=ON
    cmake -S "$src/tests/consumer" -B "$work/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DJITGEMM_EXPECTED_VERSION="$version" -DJITGEMM_USE_STATIC_LIBS=$use_static \
        >"$work/cfg.log" 2>&1 || {
        cat "$work/cfg.log"
        fail "configuring the consumer ($kind) failed"
    }
    cmake --build "$work/cmake-$kind" >"$work/build.log" 2>&1 || {
        cat "$work/build.log"
        fail "building the consumer ($kind) failed"
    }
    "$work/cmake-$kind/consumer" "$version" "$work/cache" || fail "consumer ($kind) failed"
    if readelf -d "$work/cmake-$kind/consumer" | grep -q 'libjitgemm\.so'; then
        [ $kind = shared ] || fail "the static consumer needs libjitgemm.so"
    else
        [ $kind = static ] || fail "the shared consumer does not use libjitgemm.so"
    fi
done

# The prefix first; what the caller had after it, since jitgemm.pc requires jansson and a host
# may keep jansson's .pc outside the default search path (the GPU check unpacks it privately).
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
[ "$(pkg-config --modversion jitgemm)" = "$version" ] || fail "pkg-config version"
# The .pc file gives -L and no rpath: docs/install.md has the consumer add the rpath below, and
# the program must find libjitgemm.so by it alone (the prefix is not on the loader's path).
pc_libdir=$(pkg-config --variable=libdir jitgemm)
step "pkg-config consumer, shared: $(pkg-config --cflags --libs jitgemm) -Wl,-rpath,$pc_libdir"
# shellcheck disable=SC2046 # the flags are meant to split
"$cc" -o "$work/pc-shared" "$src/tests/consumer/consumer.c" $(pkg-config --cflags --libs jitgemm) \
    "-Wl,-rpath,$pc_libdir" || fail "linking with pkg-config --libs failed"
readelf -d "$work/pc-shared" | grep -qF "[$pc_libdir]" ||
    fail "the shared pkg-config consumer has no rpath to $pc_libdir"
"$work/pc-shared" "$version" "$work/cache" || fail "pkg-config consumer (shared) failed"
static_libs=$(pkg-config --static --libs jitgemm)
step "pkg-config consumer, static: $static_libs"
# Libs.private must be all a static link needs besides the archive itself.
# shellcheck disable=SC2046
"$cc" -o "$work/pc-static" "$src/tests/consumer/consumer.c" $(pkg-config --cflags jitgemm) \
    ${static_libs//-ljitgemm/-l:libjitgemm.a} || fail "linking with pkg-config --static failed"
"$work/pc-static" "$version" "$work/cache" || fail "pkg-config consumer (static) failed"

step "the installed CLI's toolkit search"
clean_env=(env -u JITGEMM_TOOLKIT_DIR -u CUDA_HOME -u CUDA_PATH JITGEMM_CACHE_DIR="$work/cache")
out=$("${clean_env[@]}" "$prefix/bin/jitgemm" --version)
echo "$out"
case $out in *"jitgemm $version "*) ;; *) fail "--version does not say $version" ;; esac
case $out in *"$build"* | *"$deps"*) fail "the installed CLI used a build-tree toolkit" ;; esac
# No .deps at all (a host that got only the source tree) is no error: the search is then
# not exercised (pipefail would otherwise end the script here, silently).
toolkit=$({ find -L "$deps" -maxdepth 1 -name 'cuda-*' -type d 2>/dev/null || true; } | sort | tail -n 1)
if [ -n "$toolkit" ]; then
    mkdir -p "$prefix/$libdir/jitgemm-toolkits"
    ln -s "$toolkit" "$prefix/$libdir/jitgemm-toolkits/"
    out=$("${clean_env[@]}" "$prefix/bin/jitgemm" --version)
    echo "$out"
    case $out in *"$prefix/$libdir/jitgemm-toolkits/cuda-"*) ;;
    *) fail "the installed CLI did not find the toolkit in <libdir>/jitgemm-toolkits" ;; esac
    # The shared library finds it beside itself, whatever program loaded it.
    step "a program using the installed shared library compiles with that toolkit"
    out=$("${clean_env[@]}" JITGEMM_LOG=info "$work/cmake-shared/consumer" "$version" \
        "$work/cache-prewarm" prewarm 2>&1) || fail "prewarm through the shared library: $out"
    echo "$out"
    case $out in *"NVRTC "*" ($prefix/$libdir/jitgemm-toolkits/cuda-"*) ;;
    *) fail "the installed shared library did not compile with <libdir>/jitgemm-toolkits" ;; esac
else
    step "no project-local toolkit in $deps: the relative search is not exercised"
fi
step "ok"
