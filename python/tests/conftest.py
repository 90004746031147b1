"""Shared fixtures. The tests import the package from this checkout (python/), and the library
from wherever the package finds it (docs/python.md): in CI, the checkout's build/."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Compile-only work targets Hopper explicitly, so no test depends on a GPU being present.
ARCH = "sm_90a"


@pytest.fixture(scope="session", autouse=True)
def private_default_cache(tmp_path_factory):
    """Calls that name no cache_dir use the environment's: a temporary one, never the user's."""
    old = os.environ.get("JITGEMM_CACHE_DIR")
    os.environ["JITGEMM_CACHE_DIR"] = str(tmp_path_factory.mktemp("default-cache"))
    yield
    if old is None:
        os.environ.pop("JITGEMM_CACHE_DIR", None)
    else:
        os.environ["JITGEMM_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def build_dir():
    d = Path(os.environ.get("JITGEMM_BUILD_DIR", REPO / "build"))
    if not (d / "libjitgemm.so").exists():
        pytest.skip("no %s/libjitgemm.so: build the library first" % d)
    return d


@pytest.fixture(scope="session")
def cli(build_dir):
    """Run the CLI built beside the library; returns (exit status, stdout, stderr)."""
    exe = build_dir / "jitgemm"
    if not exe.exists():
        pytest.skip("no %s" % exe)

    def run(*args):
        r = subprocess.run([str(exe)] + [str(a) for a in args], capture_output=True, text=True,
                           timeout=300)
        return r.returncode, r.stdout, r.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    def run(*args):
        rc, out, err = cli(*args)
        assert rc == 0, err
        return json.loads(out)

    return run


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    return d


def run_python(code, env=None, cwd=None):
    """Run `code` in a fresh interpreter (the library is loaded once per process, so loading
    rules are tested in children). Returns (exit status, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env.pop("JITGEMM_LIBRARY", None)
    full_env.update(env or {})
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=full_env, cwd=cwd, timeout=300)
    return r.returncode, r.stdout, r.stderr
