#!/usr/bin/env bash
# Set up a Debian or Ubuntu machine for jitgemm and build it.
#
# 1. Installs the build dependencies from the distribution (only those missing): cmake,
#    pkg-config, jansson, Criterion, xxhash, clang (for the fuzzers). The CUDA toolkit itself
#    is expected to be there already (headers only: nothing links against CUDA libraries).
# 2. Puts a newer NVRTC and nvJitLink than the system toolkit's into the project-local folder
#    .deps/cuda-<major.minor>/{lib,include}, from the wheels on PyPI. They are downloaded with
#    `pip download` and unpacked by hand, so nothing is installed system-wide; the library finds
#    that folder at run time and prefers the newest NVRTC it sees (CUDA 13.0's NVRTC cannot
#    target sm_107a, 13.4 and later can). The unpacked libraries are checked by loading them and
#    asking NVRTC for its version and its list of supported targets. nvdisasm, for the static
#    SASS checks, goes into .deps/cuda-<major.minor>/bin the same way.
# 3. Installs pytest (and setuptools and wheel) for the Python binding's tests (python/tests)
#    into .deps/py with `pip install --target`, not system-wide; they run as
#    PYTHONPATH=.deps/py python3 -m pytest.
# 4. Configures and builds into build/.
#
# Idempotent: a second run installs nothing and downloads nothing. Runs as root, or as a user
# with sudo for the package step.
#
#   scripts/setup.sh [--no-build] [--no-nvrtc]
set -euo pipefail

# ---- pinned versions (the one place to change them) ----------------------------------------
NVRTC_WHEEL_VERSION=13.5.37
NVJITLINK_WHEEL_VERSION=13.5.37
NVDISASM_WHEEL_VERSION=13.5.37
# The Python binding's tests: pytest, and the build backend its pip-install test builds with
# offline (setuptools, and wheel, which setuptools before 70.1 needs).
PY_TEST_PACKAGES=(pytest==8.3.5 setuptools==75.3.0 wheel==0.45.1)
# clang and libclang-rt-14-dev (libFuzzer and clang's sanitizer runtimes: only a recommendation
# of clang, which --no-install-recommends skips; 14 is Debian 12's clang) build the fuzz
# harnesses (tests/fuzz). gcc's sanitizer runtimes, for the JITGEMM_SANITIZE build, come with gcc.
# g++ builds the functional model and compiles the generated tcgen05 kernels as host C++ for it
# (tests/fmodel, ctest fmodel_quick).
APT_PACKAGES=(gcc g++ make cmake pkg-config libjansson-dev libcriterion-dev libxxhash-dev clang
    libclang-rt-14-dev)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS_DIR="$ROOT/.deps/cuda-${NVRTC_WHEEL_VERSION%.*}"
PY_DEPS_DIR="$ROOT/.deps/py"
BUILD_DIR="$ROOT/build"

do_build=1
do_nvrtc=1
for arg in "$@"; do
    case "$arg" in
    --no-build) do_build=0 ;;
    --no-nvrtc) do_nvrtc=0 ;;
    -h | --help)
        sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "setup: unknown option '$arg' (try --help)" >&2
        exit 2
        ;;
    esac
done

say() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

# ---- privileges ------------------------------------------------------------------------------
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        SUDO=(false)
    fi
fi

pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

apt_updated=0
apt_install() {
    [ "${SUDO[0]:-}" = false ] && die "need root or sudo to install: $*"
    if [ "$apt_updated" -eq 0 ]; then
        say "apt-get update"
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    say "apt-get install $*"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---- 1. distribution packages -----------------------------------------------------------------
command -v dpkg-query >/dev/null 2>&1 || die "this script expects a Debian or Ubuntu system"
missing=()
for p in "${APT_PACKAGES[@]}"; do
    pkg_installed "$p" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt_install "${missing[@]}"
else
    say "packages present: ${APT_PACKAGES[*]}"
fi

# The CUDA toolkit's headers (cuda.h, nvrtc.h, nvJitLink.h) are needed to build; its libraries
# are not. Look where CMake's FindCUDAToolkit looks.
cuda_home="${CUDA_HOME:-${CUDA_PATH:-}}"
if [ -z "$cuda_home" ]; then
    if command -v nvcc >/dev/null 2>&1; then
        cuda_home="$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)"
    else
        cuda_home=/usr/local/cuda
    fi
fi
[ -f "$cuda_home/include/cuda.h" ] ||
    die "no CUDA toolkit found (looked for $cuda_home/include/cuda.h); install CUDA 13.0 or set CUDA_HOME"
say "CUDA toolkit: $cuda_home"

# ---- 2. project-local NVRTC + nvJitLink -------------------------------------------------------
# Loads the unpacked libraries and prints "nvrtc X.Y archs ... nvjitlink X.Y"; fails if either
# does not load. ctypes keeps this free of a compiler step.
probe_toolchain() {
    python3 - "$1" <<'EOF'
import ctypes, sys
lib = sys.argv[1]
rtc = ctypes.CDLL(lib + "/libnvrtc.so.13")
major, minor = ctypes.c_int(), ctypes.c_int()
assert rtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
n = ctypes.c_int()
assert rtc.nvrtcGetNumSupportedArchs(ctypes.byref(n)) == 0
archs = (ctypes.c_int * n.value)()
assert rtc.nvrtcGetSupportedArchs(archs) == 0
link = ctypes.CDLL(lib + "/libnvJitLink.so.13")
lmajor, lminor = ctypes.c_uint(), ctypes.c_uint()
assert link.nvJitLinkVersion(ctypes.byref(lmajor), ctypes.byref(lminor)) == 0
print("nvrtc %d.%d archs %s nvjitlink %d.%d" % (major.value, minor.value,
      ",".join(str(a) for a in archs), lmajor.value, lminor.value))
EOF
}

deps_complete() {
    local f
    for f in lib/libnvrtc.so.13 lib/libnvJitLink.so.13 include/nvrtc.h include/nvJitLink.h; do
        [ -f "$DEPS_DIR/$f" ] || return 1
    done
    ls "$DEPS_DIR"/lib/libnvrtc-builtins.so.* >/dev/null 2>&1
}

if [ "$do_nvrtc" -eq 1 ]; then
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
        apt_install python3 python3-pip
    fi
    want="${NVRTC_WHEEL_VERSION%.*}"
    if deps_complete && probe="$(probe_toolchain "$DEPS_DIR/lib" 2>/dev/null)" &&
        [[ "$probe" == "nvrtc $want "* ]]; then
        say "NVRTC already in ${DEPS_DIR#"$ROOT"/}: $probe"
    else
        tmp="$(mktemp -d)"
        trap 'rm -rf "$tmp"' EXIT
        say "pip download nvidia-cuda-nvrtc==$NVRTC_WHEEL_VERSION" \
            "nvidia-nvjitlink==$NVJITLINK_WHEEL_VERSION (into a temporary folder)"
        python3 -m pip download --quiet --no-deps --only-binary=:all: \
            --disable-pip-version-check --dest "$tmp/wheels" \
            "nvidia-cuda-nvrtc==$NVRTC_WHEEL_VERSION" \
            "nvidia-nvjitlink==$NVJITLINK_WHEEL_VERSION"
        for whl in "$tmp"/wheels/*.whl; do
            say "unpack $(basename "$whl")"
            python3 -m zipfile -e "$whl" "$tmp/unpacked"
        done
        src="$tmp/unpacked/nvidia/cu13"
        [ -d "$src/lib" ] || die "unexpected wheel layout: no nvidia/cu13/lib"
        # Assemble beside the destination under a name the library's search (.deps/cuda-*)
        # skips, then swap it in, so an interrupted run never leaves a half-filled toolkit.
        staging="$(dirname "$DEPS_DIR")/.partial-$(basename "$DEPS_DIR")"
        rm -rf "$staging"
        mkdir -p "$staging/lib" "$staging/include"
        cp -a "$src"/lib/. "$staging/lib/"
        cp -a "$src"/include/. "$staging/include/"
        printf 'nvidia-cuda-nvrtc==%s\nnvidia-nvjitlink==%s\n' \
            "$NVRTC_WHEEL_VERSION" "$NVJITLINK_WHEEL_VERSION" >"$staging/VERSIONS"
        rm -rf "$DEPS_DIR"
        mv "$staging" "$DEPS_DIR"
        deps_complete || die "NVRTC files missing after unpacking into $DEPS_DIR"
        probe="$(probe_toolchain "$DEPS_DIR/lib")" || die "the unpacked NVRTC does not load"
        [[ "$probe" == "nvrtc $want "* ]] || die "unexpected NVRTC version: $probe"
        say "NVRTC installed in ${DEPS_DIR#"$ROOT"/}: $probe"
    fi
    case ",${probe#* archs }," in
    *,107,*) say "sm_107a is a native target of this NVRTC" ;;
    *) say "warning: this NVRTC does not list sm_107a; Rubin kernels will use the sm_100f fallback" ;;
    esac
else
    say "skipping NVRTC download (--no-nvrtc): the system toolkit's NVRTC will be used"
fi

# ---- 2b. project-local nvdisasm ---------------------------------------------------------------
# For the static SASS checks of the tcgen05 kernels (scripts/tcgen05-checks/sass-check.py,
# ctest sass_check): nvdisasm is a separate wheel; it goes into the same folder, beside NVRTC.
# Without it that test reports itself skipped.
if [ "$do_nvrtc" -eq 1 ]; then
    nvdisasm="$DEPS_DIR/bin/nvdisasm"
    if [ -x "$nvdisasm" ] && "$nvdisasm" --version 2>/dev/null | grep -q "release ${NVDISASM_WHEEL_VERSION%.*}"; then
        say "nvdisasm already in ${DEPS_DIR#"$ROOT"/}/bin"
    else
        tmpd="$(mktemp -d)"
        say "pip download nvidia-cuda-nvdisasm==$NVDISASM_WHEEL_VERSION (into a temporary folder)"
        if python3 -m pip download --quiet --no-deps --only-binary=:all: \
            --disable-pip-version-check --dest "$tmpd/wheels" \
            "nvidia-cuda-nvdisasm==$NVDISASM_WHEEL_VERSION"; then
            python3 -m zipfile -e "$tmpd"/wheels/*.whl "$tmpd/unpacked"
            mkdir -p "$DEPS_DIR/bin"
            # Copy under a temporary name and rename, so an interrupted run leaves no
            # half-written binary that looks installed.
            cp "$tmpd/unpacked/nvidia/cu13/bin/nvdisasm" "$DEPS_DIR/bin/.nvdisasm.partial"
            chmod 755 "$DEPS_DIR/bin/.nvdisasm.partial"
            mv "$DEPS_DIR/bin/.nvdisasm.partial" "$nvdisasm"
            say "nvdisasm installed: $("$nvdisasm" --version | grep release)"
        else
            say "warning: could not download nvdisasm; the SASS checks will be skipped"
        fi
        rm -rf "$tmpd"
    fi
fi

# ---- 3. pytest for the Python binding's tests --------------------------------------------------
# Into a project-local folder (pip's --target is allowed where the distribution marks its Python
# as externally managed), so nothing is installed system-wide.
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    apt_install python3 python3-pip
fi
py_deps_complete() {
    local p
    for p in "${PY_TEST_PACKAGES[@]}"; do
        [ -d "$PY_DEPS_DIR/${p%%==*}-${p#*==}.dist-info" ] || return 1
    done
}
if py_deps_complete; then
    say "${PY_TEST_PACKAGES[*]} already in ${PY_DEPS_DIR#"$ROOT"/}"
else
    say "pip install --target ${PY_DEPS_DIR#"$ROOT"/} ${PY_TEST_PACKAGES[*]}"
    rm -rf "$PY_DEPS_DIR"
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --root-user-action=ignore --target "$PY_DEPS_DIR" "${PY_TEST_PACKAGES[@]}" ||
        die "could not install ${PY_TEST_PACKAGES[*]} into $PY_DEPS_DIR"
    py_deps_complete || die "${PY_TEST_PACKAGES[*]} missing from $PY_DEPS_DIR after pip install"
fi

# ---- 4. build ---------------------------------------------------------------------------------
if [ "$do_build" -eq 1 ]; then
    jobs="$(nproc 2>/dev/null || echo 2)"
    say "cmake -S . -B build -DJITGEMM_WERROR=ON"
    cmake -S "$ROOT" -B "$BUILD_DIR" -DJITGEMM_WERROR=ON >/dev/null
    say "cmake --build build -j$jobs"
    cmake --build "$BUILD_DIR" -j"$jobs"
    say "done: build/jitgemm, tests in build/ (ctest --test-dir build)"
else
    say "skipping the build (--no-build)"
fi
