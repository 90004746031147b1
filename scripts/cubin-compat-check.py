#!/usr/bin/env python3
"""Load cubins that a newer NVRTC built (carried from the build machine) on this GPU's driver,
launch each on fresh random data and compare with an FP64 reference.

The question it answers: does a cubin from the project-local NVRTC (13.4+, the one the library
prefers) load and compute correctly on an older driver? The library has a fallback for the
case where it does not (api/stage_load.c retries with the newest NVRTC the driver is as new as);
this script checks which case the GPU in hand is in.

Usage: scripts/cubin-compat-check.py CACHE_DIR   (a jitgemm cache prewarmed for this GPU's arch)
Needs PyTorch (for the reference and device memory) and libcuda.
"""
import ctypes
import glob
import json
import math
import os
import re
import struct
import sys

import torch

cuda = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(r, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else r}")


def main():
    cache = sys.argv[1]
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # make the primary context current
    drv = ctypes.c_int()
    check(cuda.cuDriverGetVersion(ctypes.byref(drv)), "cuDriverGetVersion")
    print(f"driver CUDA {drv.value // 1000}.{drv.value % 1000 // 10}")
    sidecars = sorted(glob.glob(os.path.join(cache, "kernels", "*.json")))
    if not sidecars:
        print("no cache entries in", cache)
        return 1
    failures = 0
    for path in sidecars:
        e = json.load(open(path))
        key = dict(kv.split("=", 1) for kv in e["key_text"].split()[1:])
        if not key.get("family", "").startswith("fp8_"):
            continue
        n, k = int(key["n"]), int(key["k"])
        tm, tn, _ = (int(x) for x in key["tile"].split("x"))
        epi = key["epilogue"]
        lo = {"0": 1, "1": 17, "2": 65, "3": 129, "4": 257, "5": 1025}[key["band"]]
        m = lo + 37  # ragged inside the band
        cubin = open(path[:-5] + ".cubin", "rb").read()
        mod = ctypes.c_void_p()
        r = cuda.cuModuleLoadData(ctypes.byref(mod), cubin)
        tag = f"{e['hash'][:12]} {epi:13s} n={n} k={k} m={m} nvrtc={e['toolchain']['nvrtc']}"
        if r != 0:
            name = ctypes.c_char_p()
            cuda.cuGetErrorName(r, ctypes.byref(name))
            print(f"LOAD FAILED {tag}: {name.value.decode()}")
            failures += 1
            continue
        fn = ctypes.c_void_p()
        check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, e["kernel_name"].encode()), "get")
        check(cuda.cuFuncSetAttribute(fn, 8, e["smem_bytes"]), "smem attr")  # MAX_DYNAMIC_SHARED
        g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
        a32 = torch.randn(m, k, device="cuda", generator=g) * 2
        b32 = torch.randn(n, k, device="cuda", generator=g) * 2
        a = a32.to(torch.float8_e4m3fn)
        b = b32.to(torch.float8_e4m3fn)
        sa = torch.rand(m, device="cuda", generator=g) + 0.5
        sb = torch.rand(n, device="cuda", generator=g) + 0.5
        nout = n // 2 if epi == "linear_swiglu" else n
        res = (torch.randn(m, n, device="cuda", generator=g)).to(torch.bfloat16)
        d = torch.full((m, nout), float("nan"), device="cuda", dtype=torch.bfloat16)
        params = struct.pack("<6Q5qfi", a.data_ptr(), b.data_ptr(), sa.data_ptr(), sb.data_ptr(),
                             res.data_ptr(), d.data_ptr(), m, k, k, nout, n, 1.0, 0)
        pbuf = ctypes.create_string_buffer(params, len(params))
        args = (ctypes.c_void_p * 1)(ctypes.cast(pbuf, ctypes.c_void_p))
        grid_x, grid_y = (n + tn - 1) // tn, (m + tm - 1) // tm
        check(cuda.cuLaunchKernel(fn, grid_x, grid_y, 1, e["block"][0], 1, 1, e["smem_bytes"],
                                  None, args, None), "launch")
        torch.cuda.synchronize()
        acc = (a.double() @ b.double().T) * sa.double()[:, None] * sb.double()[None, :]
        if epi == "linear_add":
            ref = acc + res.double()
        elif epi == "linear_swiglu":
            gate, up = acc[:, 0::2], acc[:, 1::2]
            ref = gate * torch.sigmoid(gate) * up
        else:
            ref = acc
        got = d.double()
        bad_nan = torch.isnan(got).sum().item()
        rel = ((got - ref).norm() / ref.norm()).item()
        ok = bad_nan == 0 and rel < 1e-2
        print(f"{'OK  ' if ok else 'FAIL'} {tag}: rel err {rel:.2e}, unwritten {bad_nan}")
        failures += not ok
        cuda.cuModuleUnload(mod)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
