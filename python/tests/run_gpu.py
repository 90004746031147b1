#!/usr/bin/env python3
"""Run the GPU checks of jitgemm.gemm (gpu_cases.py, and compile_cases.py for the PyTorch
operator under torch.compile) without pytest:

    python3 python/tests/run_gpu.py

Prints one line per case and exits 0 if all passed, 1 if any failed, 77 if they cannot run here
(no PyTorch or no GPU), the status ctest and scripts/gpu-check.sh read as "skipped".
"""

import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # the package in python/, unless one is installed

import compile_cases  # noqa: E402
import gpu_cases  # noqa: E402


def main():
    why_not = gpu_cases.available()
    if why_not:
        print("run_gpu: skipped: %s" % why_not)
        return 77
    import jitgemm

    print("run_gpu: jitgemm from %s, library %s" % (os.path.dirname(jitgemm.__file__),
                                                 jitgemm.library_path()))
    failed = 0
    cases = gpu_cases.all_cases()
    why_not = compile_cases.available()
    if why_not:
        print("run_gpu: the torch.compile cases are skipped: %s" % why_not)
    else:
        cases += compile_cases.all_cases()
    for name, fn, args in cases:
        t0 = time.monotonic()
        try:
            r = fn(*args)
        except Exception:  # one failing case must not hide the others
            failed += 1
            print("FAIL %s (%.2f s)" % (name, time.monotonic() - t0))
            traceback.print_exc()
            continue
        extra = "" if r is None else ", worst error %.3g of the bound" % r
        print("PASS %s (%.2f s%s)" % (name, time.monotonic() - t0, extra))
    print("run_gpu: %d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
