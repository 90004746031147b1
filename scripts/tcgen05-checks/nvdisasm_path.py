"""Where the project's Python scripts find nvdisasm (the SASS checks and the CUTLASS DSL
comparison): the one they are given, else $JITGEMM_NVDISASM, else the newest one that
scripts/setup.sh put under .deps/cuda-*/bin, else the one on PATH."""
import glob
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # two levels up from scripts/tcgen05-checks


def find_nvdisasm(given):
    """The nvdisasm to run, or None; an explicitly named one that is not executable is None."""
    if given:
        return given if os.access(given, os.X_OK) else None
    env = os.environ.get("JITGEMM_NVDISASM")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = sorted(glob.glob(os.path.join(ROOT, ".deps", "cuda-*", "bin", "nvdisasm")))
    return found[-1] if found else shutil.which("nvdisasm")
