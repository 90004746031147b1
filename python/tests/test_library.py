"""Loading the library, the status names, the error type, and import without PyTorch."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jitgemm
from conftest import PYTHON_DIR, run_python


def header_status_map(repo):
    """{code: "JIT_NAME"} from JIT_STATUS_MAP in include/jitgemm.h."""
    text = (repo / "include" / "jitgemm.h").read_text()
    return {int(v): "JIT_" + n for n, v in re.findall(r"X\((\w+),\s*(-?\d+),", text)}


def test_loads_the_build_tree_library(build_dir):
    assert jitgemm.library_path() == str(build_dir / "libjitgemm.so")


def test_version_matches_header_and_package(repo):
    text = (repo / "include" / "jitgemm.h").read_text()
    parts = [re.search(r"#define JITGEMM_VERSION_%s (\d+)" % w, text).group(1)
             for w in ("MAJOR", "MINOR", "PATCH")]
    assert jitgemm.library_version() == ".".join(parts)
    assert jitgemm.__version__ == ".".join(parts)
    pyproject = (PYTHON_DIR / "pyproject.toml").read_text()
    assert 'version = "%s"' % ".".join(parts) in pyproject


def test_status_names_are_the_headers(repo):
    expected = header_status_map(repo)
    assert len(expected) == 19
    assert jitgemm.status_names() == expected
    for code, name in expected.items():
        assert jitgemm.status_name(code) == name
        assert jitgemm.status_string(code)  # never empty
    assert jitgemm.status_string(-2) == "invalid problem shape"


def test_jit_error_carries_status_and_message():
    e = jitgemm.JitError(-2, "m=0 must be positive")
    assert e.status == "JIT_INVALID_SHAPE" and e.code == -2
    assert e.message == "m=0 must be positive"
    assert str(e) == "JIT_INVALID_SHAPE: m=0 must be positive"
    assert isinstance(e, RuntimeError)


def test_library_env_var_file_and_folder(build_dir):
    code = "import jitgemm; print(jitgemm.library_path()); print(jitgemm.library_version())"
    for value in (build_dir / "libjitgemm.so", build_dir):
        rc, out, err = run_python(code, {"JITGEMM_LIBRARY": str(value),
                                         "PYTHONPATH": str(PYTHON_DIR)})
        assert rc == 0, err
        assert out.split()[0] == str(build_dir / "libjitgemm.so")


def test_library_env_var_missing_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere" / "libjitgemm.so"
    code = "import jitgemm\ntry:\n jitgemm.library_path()\nexcept jitgemm.LibraryNotFound as e:\n print(e)"
    rc, out, err = run_python(code, {"JITGEMM_LIBRARY": str(missing), "PYTHONPATH": str(PYTHON_DIR)})
    assert rc == 0, err
    assert "$JITGEMM_LIBRARY: %s" % missing in out
    assert "docs/python.md" in out
    # Nothing else is tried when the variable is set.
    assert "build tree" not in out and "loader" not in out


def test_library_env_var_other_library_is_refused():
    libm = None
    for cand in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                 "/lib64/libm.so.6"):
        if os.path.exists(cand):
            libm = cand
    if not libm:
        pytest.skip("no libm.so.6 at a known path")
    code = "import jitgemm\ntry:\n jitgemm.inspect('linear', 256, 256, 1, arch='sm_90a')\nexcept jitgemm.LibraryNotFound as e:\n print(e)"
    rc, out, err = run_python(code, {"JITGEMM_LIBRARY": libm, "PYTHONPATH": str(PYTHON_DIR)})
    assert rc == 0, err
    assert "is not libjitgemm (missing symbol" in out


def test_import_and_compile_only_work_without_torch(build_dir):
    # A finder that refuses torch stands in for a machine without it.
    code = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("no torch here")
sys.meta_path.insert(0, NoTorch())
import jitgemm
assert "torch" not in sys.modules
print(jitgemm.inspect("linear", 256, 256, 1, what="key", arch="sm_90a")["hash"])
try:
    jitgemm.gemm(None, None, None, None)
except ImportError as e:
    print("gemm:", e)
"""
    rc, out, err = run_python(code, {"PYTHONPATH": str(PYTHON_DIR)})
    assert rc == 0, err
    lines = out.splitlines()
    assert re.fullmatch(r"[0-9a-f]{32}", lines[0])
    assert lines[1].startswith("gemm: jitgemm.gemm needs PyTorch")


def test_a_broken_torch_does_not_break_import(build_dir):
    """`import jitgemm` imports PyTorch when it is there; one whose import fails with another
    error than ImportError (a missing CUDA library raises OSError) must not take the package
    down: gemm then says why, and the compile-only functions work."""
    code = """
import sys
class Broken:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            raise OSError("libcudart.so.13: cannot open shared object file")
sys.meta_path.insert(0, Broken())
import jitgemm
from jitgemm import _torch_ops
print(_torch_ops.unavailable)
print(jitgemm.inspect("linear", 256, 256, 1, what="key", arch="sm_90a")["hash"])
try:
    jitgemm.gemm(None, None, None, None)
except ImportError as e:
    print("gemm:", e)
"""
    rc, out, err = run_python(code, {"PYTHONPATH": str(PYTHON_DIR)})
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == ("PyTorch is not available (OSError: libcudart.so.13: cannot open "
                        "shared object file)")
    assert re.fullmatch(r"[0-9a-f]{32}", lines[1])
    assert lines[2].startswith("gemm: jitgemm.gemm needs PyTorch (import torch failed: OSError")


def test_pip_installed_copy_finds_the_library(tmp_path, build_dir):
    """`pip install ./python` (here into a folder) gives a package that runs from anywhere and
    finds the library through $JITGEMM_LIBRARY, or through the loader's path."""
    # Offline (--no-build-isolation), so the build backend must be here already: setuptools,
    # and wheel for a setuptools older than 70.1 (Debian 12's pip brings both).
    try:
        import setuptools
        import wheel
    except ImportError as e:
        pytest.skip("the build backend is not installed (%s)" % e)
    # pip runs the backend in another folder: give it where these two are as absolute paths
    # (PYTHONPATH=.deps/py is relative to the repository).
    backend_path = os.pathsep.join(str(Path(m.__file__).resolve().parent.parent)
                                   for m in (setuptools, wheel))
    target = tmp_path / "site"
    # From a copy: setuptools leaves build/ and *.egg-info in the folder it builds.
    src = tmp_path / "src"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__", "tests"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check", "--no-index",
                        "--target", str(target), str(src)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=backend_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "jitgemm" / "__init__.py").exists()
    assert not (target / "jitgemm" / "tests").exists()
    code = "import jitgemm; print(jitgemm.__file__); print(jitgemm.library_path())"
    rc, out, err = run_python(code, {"PYTHONPATH": str(target),
                                     "JITGEMM_LIBRARY": str(build_dir / "libjitgemm.so")},
                              cwd=str(tmp_path))
    assert rc == 0, err
    assert out.splitlines()[0].startswith(str(target))
    # No variable: not a checkout, so the loader's search (LD_LIBRARY_PATH here) finds it.
    rc, out, err = run_python(code, {"PYTHONPATH": str(target), "PKG_CONFIG_PATH": str(tmp_path),
                                     "LD_LIBRARY_PATH": str(build_dir)}, cwd=str(tmp_path))
    assert rc == 0, err
    assert out.splitlines()[1] == "libjitgemm.so.0"


def test_pkg_config_prefix_is_found(tmp_path, build_dir):
    """An installed prefix is found through pkg-config's libdir."""
    if not shutil.which("pkg-config") or not shutil.which("cmake"):
        pytest.skip("needs pkg-config and cmake")
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    pcs = list(prefix.glob("lib*/pkgconfig/jitgemm.pc"))
    assert len(pcs) == 1
    # A copy of the package outside the checkout, so the build tree is not a candidate.
    shutil.copytree(PYTHON_DIR / "jitgemm", tmp_path / "pkg" / "jitgemm")
    code = "import jitgemm; print(jitgemm.library_path())"
    rc, out, err = run_python(code, {"PYTHONPATH": str(tmp_path / "pkg"),
                                     "PKG_CONFIG_PATH": str(pcs[0].parent)}, cwd=str(tmp_path))
    assert rc == 0, err
    assert out.strip() == str(pcs[0].parent.parent / "libjitgemm.so.0")


def test_enum_values_are_the_headers(repo):
    """The ctypes mirror's constants against include/jitgemm.h."""
    from jitgemm import _lib

    text = (repo / "include" / "jitgemm.h").read_text()
    header = {n: int(v) for n, v in re.findall(r"\b(JIT_[A-Z0-9_]+) = (-?\d+)", text)}
    mirror = {
        "JIT_DTYPE_E4M3": _lib.DTYPE_E4M3, "JIT_DTYPE_E5M2": _lib.DTYPE_E5M2,
        "JIT_DTYPE_E2M1": _lib.DTYPE_E2M1, "JIT_DTYPE_BF16": _lib.DTYPE_BF16,
        "JIT_DTYPE_F32": _lib.DTYPE_F32, "JIT_SCALE_ROW": _lib.SCALE_ROW,
        "JIT_EPILOGUE_LINEAR": _lib.EPILOGUE_LINEAR,
        "JIT_EPILOGUE_LINEAR_ADD": _lib.EPILOGUE_LINEAR_ADD,
        "JIT_EPILOGUE_LINEAR_SWIGLU": _lib.EPILOGUE_LINEAR_SWIGLU,
    }
    mirror.update({"JIT_INSPECT_" + w.upper(): v for w, v in _lib.INSPECT_STAGES.items()})
    mirror.update({"JIT_PREWARM_" + w.upper(): v for v, w in _lib.PREWARM_RESULTS.items()})
    for name, value in mirror.items():
        assert header[name] == value, name
    statuses = header_status_map(repo)
    assert min(statuses) == _lib.STATUS_MIN, "a status the package does not know"
    assert statuses[_lib.STATUS_CACHE_ERROR] == "JIT_CACHE_ERROR"


def header_struct_fields(text, tag):
    """Field names of `typedef struct TAG {...}` in declaration order."""
    body = re.search(r"typedef struct %s \{(.*?)\}" % tag, text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for decl in body.split(";"):
        parts = [p.strip() for p in decl.split(",") if p.strip()]
        if not parts:
            continue
        names.append(re.findall(r"\w+", parts[0])[-1])
        names += [re.findall(r"\w+", p)[-1] for p in parts[1:]]
    return names


@pytest.mark.parametrize("tag,cls", [("jit_problem", "Problem"), ("jit_operands", "Operands"),
                                     ("jit_context_options", "ContextOptions"),
                                     ("jit_prewarm_event", "PrewarmEvent")])
def test_struct_mirrors_follow_the_header(repo, tag, cls):
    from jitgemm import _lib

    text = (repo / "include" / "jitgemm.h").read_text()
    assert [f[0] for f in getattr(_lib, cls)._fields_] == header_struct_fields(text, tag)
