#!/usr/bin/env python3
"""jitgemm against torch._scaled_mm, in one process, CUDA-graph timed, after an FP64 check.

The library is loaded with ctypes (build-gpu/libjitgemm.so or --lib) and called on PyTorch's
current stream, so both GEMMs run on the same device, the same inputs and the same clocks:

  1. the device's copy bandwidth (a 2 GiB device-to-device copy, bytes read plus written);
  2. per shape: fresh random E4M3 inputs (no zero, no NaN codes), row scales that keep the
     outputs O(1..10), D poisoned with BF16 NaN; one jitgemm call; every element of D must have
     been written, and sampled rows (first, last and --check-rows random ones) must match a host
     FP64 reference (numpy) within the tolerance of the family that computed it: half a BF16 ulp
     plus 1e-5 * mag (fp8_mma_sync, FP32 accumulation) or 2^-12 * mag (fp8_wgmma, FP8 tensor
     core accumulation promoted every 128 K), mag = sum_k |a b sa sb| (kernel_src/reference/);
  3. only if the check passed: jitgemm and torch._scaled_mm row-wise (same scales, BF16 out,
     use_fast_accum=False, its default) are each captured as a CUDA graph of --graph-iters calls
     and the two graphs are replayed in alternation, --reps times each, so that both run at the
     same clocks; the median per call is reported. Operand sets rotate so the
     working set is at least three times the L2 cache: weights are read from HBM, not L2.

For linear_add and linear_swiglu torch runs the GEMM and then the epilogue in PyTorch (the
residual add; silu(gate) * up over interleaved gate/up columns), the work jitgemm fuses.

    python3 bench/torch_anchor.py --shapes "linear:5120:17408:4096 linear:8192:3584:1"
    python3 bench/torch_anchor.py --sweep --shapes "linear:5120:17408:1024"

--scales 128x128 runs the block-scaled mode instead (bench/torch_anchor_blockscaled.py): the
128x128 format (FP32 scales per 1x128 group of A, m-major, and per 128x128 block of B) against
torch._scaled_mm's blockwise path, with the row-scaled kernel beside it at M >= 4096; without
--shapes it runs M in {1, 16, 64, 128, 4096} at seven DeepSeek-V3 projection shapes.

--grouped times jit_gemm_grouped against torch._scaled_grouped_mm and against jitgemm's dense
kernel on the same total M, N and K (bench/torch_anchor_grouped.py says how):

    python3 bench/torch_anchor.py --grouped
    python3 bench/torch_anchor.py --grouped "linear:8:64:7168:2048 linear_swiglu:8:512:4096:7168"

--sweep times every candidate the cost models weigh (JITGEMM_FORCE_CANDIDATE, a fresh context
each) at each shape and reports, per cell, how far the model's choice is from the fastest one.
A cell's candidates share one operand rotation; each is checked and captured first, then they
are timed in --reps interleaved rounds (one graph replay each per round, the order rotating), so
a drift of the clock moves them all alike instead of whichever ran last.

The clocks are left as found; NVML (libnvidia-ml, when the driver has it) is sampled every
millisecond while graphs replay, and each timing carries the median SM clock and board power
seen during its replays. Shapes are op:n:k:tokens. Exit status 1 if any check failed.
"""
import argparse
import bisect
import ctypes
import json
import os
import random
import statistics
import sys
import threading
import time

# ---- the library's public API (include/jitgemm.h) ----------------------------------------


class Problem(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("k", ctypes.c_int64), ("a_dtype", ctypes.c_int), ("b_dtype", ctypes.c_int),
                ("out_dtype", ctypes.c_int), ("scale_mode", ctypes.c_int),
                ("epilogue", ctypes.c_int), ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64),
                ("ldd", ctypes.c_int64), ("ld_residual", ctypes.c_int64),
                ("alpha", ctypes.c_float), ("sfa_layout", ctypes.c_int),
                ("ld_sfa", ctypes.c_int64), ("scale_type", ctypes.c_int),
                ("groups", ctypes.c_int64), ("layout", ctypes.c_int),
                ("expected_m", ctypes.c_int64), ("group_flags", ctypes.c_uint32)]


class Operands(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("a", ctypes.c_void_p), ("b", ctypes.c_void_p),
                ("scale_a", ctypes.c_void_p), ("scale_b", ctypes.c_void_p),
                ("residual", ctypes.c_void_p), ("d", ctypes.c_void_p),
                ("group_offsets", ctypes.c_void_p), ("group_counts", ctypes.c_void_p),
                ("gather_index", ctypes.c_void_p)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("cache_dir", ctypes.c_char_p),
                ("arch", ctypes.c_char_p), ("sm_count", ctypes.c_int),
                ("log_level", ctypes.c_int), ("toolkit_dir", ctypes.c_char_p),
                ("cache_max_bytes", ctypes.c_int64), ("compile_mode", ctypes.c_int)]


def init_struct(init_fn, cls):
    """Call a jit_*_init on a buffer with room to spare: the library writes its own struct size,
    which grows with new fields, and a mirror here one field short would be overrun (a heap
    overflow that crashed this script once). The result must have this mirror's size."""
    buf = ctypes.create_string_buffer(ctypes.sizeof(cls) + 256)
    init_fn(buf)
    obj = cls.from_buffer_copy(buf.raw[: ctypes.sizeof(cls)])
    if obj.struct_size != ctypes.sizeof(cls):
        raise RuntimeError(f"{cls.__name__}: the library's struct is {obj.struct_size} bytes, "
                           f"this script knows {ctypes.sizeof(cls)}: update the mirror")
    return obj


EPILOGUES = {"linear": 1, "linear_add": 2, "linear_swiglu": 3}
INSPECT_PLAN = 2  # jit_inspect_what_t: JIT_INSPECT_KEY = 1, JIT_INSPECT_PLAN = 2


class Jitgemm:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.jit_context_options_init.argtypes = [ctypes.c_void_p]
        lib.jit_context_create.argtypes = [ctypes.POINTER(Options), ctypes.POINTER(ctypes.c_void_p)]
        lib.jit_context_destroy.argtypes = [ctypes.c_void_p]
        lib.jit_problem_init.argtypes = [ctypes.c_void_p]
        lib.jit_operands_init.argtypes = [ctypes.c_void_p]
        lib.jit_gemm.argtypes = [ctypes.c_void_p, ctypes.POINTER(Problem),
                                 ctypes.POINTER(Operands), ctypes.c_void_p]
        lib.jit_gemm_grouped.argtypes = lib.jit_gemm.argtypes
        lib.jit_inspect.argtypes = [ctypes.c_void_p, ctypes.POINTER(Problem), ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p)]
        lib.jit_free.argtypes = [ctypes.c_void_p]
        lib.jit_last_error.argtypes = [ctypes.c_void_p]
        lib.jit_last_error.restype = ctypes.c_char_p
        lib.jit_status_name.argtypes = [ctypes.c_int]
        lib.jit_status_name.restype = ctypes.c_char_p
        self.lib = lib

    def context(self):
        opt = init_struct(self.lib.jit_context_options_init, Options)
        opt.log_level = 1
        ctx = ctypes.c_void_p()
        st = self.lib.jit_context_create(ctypes.byref(opt), ctypes.byref(ctx))
        if st != 0:
            raise RuntimeError(f"jit_context_create: {self.lib.jit_last_error(None).decode()}")
        return ctx

    def problem(self, op, m, n, k, ldd):
        p = init_struct(self.lib.jit_problem_init, Problem)
        p.m, p.n, p.k, p.epilogue, p.ldd = m, n, k, EPILOGUES[op], ldd
        return p

    def plan(self, ctx, prob):
        out = ctypes.c_void_p()
        st = self.lib.jit_inspect(ctx, ctypes.byref(prob), INSPECT_PLAN, ctypes.byref(out))
        if st != 0:
            raise RuntimeError(f"jit_inspect: {self.lib.jit_last_error(ctx).decode()}")
        text = ctypes.cast(out, ctypes.c_char_p).value.decode()
        self.lib.jit_free(out)
        return json.loads(text)

    def gemm(self, ctx, prob, a, b, sa, sb, res, d, stream):
        ops = init_struct(self.lib.jit_operands_init, Operands)
        ops.a, ops.b, ops.scale_a, ops.scale_b = a.data_ptr(), b.data_ptr(), sa.data_ptr(), sb.data_ptr()
        ops.residual = res.data_ptr() if res is not None else None
        ops.d = d.data_ptr()
        st = self.lib.jit_gemm(ctx, ctypes.byref(prob), ctypes.byref(ops), stream)
        if st != 0:
            raise RuntimeError(f"jit_gemm: {self.lib.jit_status_name(st).decode()}: "
                               f"{self.lib.jit_last_error(ctx).decode()}")


# ---- inputs, reference, timing ------------------------------------------------------------


def parse_shapes(text):
    shapes = []
    for word in text.split():
        op, n, k, t = word.split(":")
        if op not in EPILOGUES:
            raise SystemExit(f"torch_anchor: unknown op {op!r} in {word!r}")
        shapes.append((op, int(n), int(k), int(t)))
    return shapes


def random_e4m3(torch, rows, k, gen):
    """E4M3 codes 1..126 with a random sign: finite and non-zero."""
    mag = torch.randint(1, 127, (rows, k), dtype=torch.uint8, device="cuda", generator=gen)
    sign = torch.randint(0, 2, (rows, k), dtype=torch.uint8, device="cuda", generator=gen) << 7
    return (mag | sign).view(torch.float8_e4m3fn)


class Inputs:
    """One operand set; scales normalise rows so sum_k a b sa sb is about 4 x N(0,1) x [0.5, 2]."""

    def __init__(self, torch, op, m, n, k, ldd, gen):
        self.a = random_e4m3(torch, m, k, gen)
        self.b = random_e4m3(torch, n, k, gen)
        rms_a = self.a.float().pow(2).mean(dim=1).sqrt()
        rms_b = self.b.float().pow(2).mean(dim=1).sqrt()
        ua = torch.rand(m, device="cuda", generator=gen) * 1.5 + 0.5
        ub = torch.rand(n, device="cuda", generator=gen) * 1.5 + 0.5
        self.sa = (ua * 4.0 / (rms_a * k ** 0.5)).float().contiguous()
        self.sb = (ub / rms_b).float().contiguous()
        self.res = None
        if op == "linear_add":
            self.res = ((torch.rand(m, n, device="cuda", generator=gen) * 8 - 4)
                        .to(torch.bfloat16).contiguous())
        nout = n // 2 if op == "linear_swiglu" else n
        self.d = torch.empty(m, ldd, dtype=torch.bfloat16, device="cuda")
        self.nout = nout


def family_tolerance(family, ref, mag):
    import numpy as np
    acc = 2.0 ** -10 if family in ("fp8_wgmma", "fp8_block_wgmma") else 1e-5
    return np.abs(ref) * 2.0 ** -8 + acc * mag + 2.0 ** -100


def check(torch, op, x, m, n, k, family, rows):
    """Worst |err| / tolerance over the sampled rows, and the count of unwritten outputs."""
    import numpy as np
    d = x.d[:, :x.nout]
    unwritten = int((d.view(torch.int16) == -1).sum().item())
    a = x.a[rows].float().double().cpu().numpy()
    b = x.b.float().double().cpu().numpy()
    sa = x.sa[rows].double().cpu().numpy()[:, None]
    sb = x.sb.double().cpu().numpy()[None, :]
    acc = (a @ b.T) * sa * sb
    mag = (np.abs(a) @ np.abs(b).T) * sa * sb
    if op == "linear":
        ref, rmag = acc, mag
    elif op == "linear_add":
        r = x.res[rows].double().cpu().numpy()
        ref, rmag = acc + r, mag + np.abs(r)
    else:
        g, u, gm, um = acc[:, 0::2], acc[:, 1::2], mag[:, 0::2], mag[:, 1::2]
        s = np.where(g >= 0, 1.0 / (1.0 + np.exp(-np.abs(g))),
                     np.exp(-np.abs(g)) / (1.0 + np.exp(-np.abs(g))))
        silu = g * s
        ref = silu * u
        rmag = np.abs(u * s * (1.0 + g * (1.0 - s))) * gm + np.abs(silu) * um
    got = d[rows].double().cpu().numpy()
    err = np.abs(got - ref)
    tol = family_tolerance(family, ref, rmag)
    ratio = np.where(np.isfinite(err), err / tol, np.inf)
    return float(ratio.max()), unwritten


class ClockSampler:
    """SM clock (MHz) and board power (W) from NVML, sampled every millisecond on a thread, so a
    timing can say at what clock it ran. NVML is the driver's library; without it (or if a call
    fails) the sampler records nothing and timings carry no clock."""

    def __init__(self, props):
        self.samples = []  # (time.monotonic(), sm_mhz, watts)
        self.ok = False
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            handle = ctypes.c_void_p()
            if nvml.nvmlInit_v2() != 0:
                return
            # The device torch runs on, found by its PCI address (NVML's indices ignore
            # CUDA_VISIBLE_DEVICES); NVML's first device where torch does not say.
            bus = getattr(props, "pci_bus_id", None)
            if bus is not None:
                addr = (f"{getattr(props, 'pci_domain_id', 0):08x}:{bus:02x}:"
                        f"{getattr(props, 'pci_device_id', 0):02x}.0").encode()
                found = nvml.nvmlDeviceGetHandleByPciBusId_v2(addr, ctypes.byref(handle))
            else:
                found = nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
            if found != 0:
                return
            self.nvml, self.handle, self.ok = nvml, handle, True
        except OSError:
            return
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        mhz, mw = ctypes.c_uint(), ctypes.c_uint()
        while not self.stop.is_set():
            # NVML_CLOCK_SM = 1
            if (self.nvml.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(mhz)) == 0 and
                    self.nvml.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(mw)) == 0):
                self.samples.append((time.monotonic(), mhz.value, mw.value / 1000.0))
            time.sleep(0.001)

    def during(self, windows):
        """Median SM clock and power over the samples inside any of the (t0, t1) windows."""
        if not self.ok:
            return {}
        # The samples are in time order: each window is a slice, found by bisection (the list
        # grows by about a thousand a second over the whole run).
        samples = list(self.samples)
        got = []
        for a, b in windows:
            lo = bisect.bisect_left(samples, a, key=lambda x: x[0])
            hi = bisect.bisect_right(samples, b, key=lambda x: x[0])
            got += [(c, w) for (_, c, w) in samples[lo:hi]]
        if not got:
            return {}
        return {"sm_clock_mhz": statistics.median(c for c, _ in got),
                "power_w": round(statistics.median(w for _, w in got), 1), "clock_samples": len(got)}

    def close(self):
        if self.ok:
            self.stop.set()
            self.thread.join()


SAMPLER = None  # the process's ClockSampler, made in main()


def capture(torch, calls, graph_iters):
    """A CUDA graph that replays `calls` round-robin graph_iters times (run once, warm)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(graph_iters):
            calls[i % len(calls)]()
    g.replay()
    torch.cuda.synchronize()
    return g


def replay_us(torch, g, graph_iters, windows):
    """One timed replay: microseconds per call; its wall-clock window is added to `windows`."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.monotonic()
    e0.record()
    g.replay()
    e1.record()
    torch.cuda.synchronize()
    windows.append((t0, time.monotonic()))
    return e0.elapsed_time(e1) * 1e3 / graph_iters


def copy_bandwidth(torch, graph_iters, reps):
    n = 1 << 30  # 1 GiB each way
    # FP32 elements: torch's copy kernel moves them in 16-byte vectors; a uint8 copy measured
    # 2.7 TB/s on the H200, well under what the memory does (3.9 TB/s with FP32).
    src = torch.empty(n // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    # An idle GPU starts at a low clock: keep it busy for about a second before measuring
    # anything (the clocks are left as found; this only lets them leave idle).
    t0 = time.time()
    while time.time() - t0 < 1.0:
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()
    times, _ = interleaved_times(torch, [capture(torch, [lambda: dst.copy_(src)], graph_iters)],
                                 graph_iters, reps)
    us = statistics.median(times[0])
    return 2.0 * n / (us * 1e-6)


def rotation(torch, op, m, n, k, ldd, gen):
    """Enough operand sets that their bytes exceed three times the L2 cache (at most 8)."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per = m * k + n * k + 2 * m * ldd + (2 * m * n if op == "linear_add" else 0)
    count = max(1, min(8, -(-3 * l2 // per)))
    return [Inputs(torch, op, m, n, k, ldd, gen) for _ in range(count)]


def checked(torch, jg, ctx, op, n, k, m, args, sets, stream_of):
    """Plan and check jitgemm on the first operand set; returns (result dict, the calls of every
    set to time, or None if the check failed)."""
    ldd = n // 2 if op == "linear_swiglu" else n
    prob = jg.problem(op, m, n, k, ldd)
    plan = jg.plan(ctx, prob)
    r = {"op": op, "n": n, "k": k, "tokens": m, "family": plan["family"],
         "tile": f'{plan["tile"]["m"]}x{plan["tile"]["n"]}', "stages": plan["stages"]}
    x = sets[0]
    x.d.view(torch.int16).fill_(-1)
    jg.gemm(ctx, prob, x.a, x.b, x.sa, x.sb, x.res, x.d, stream_of())
    torch.cuda.synchronize()
    rows = sorted(set([0, m - 1] + random.Random(m * 7 + n).sample(range(m), min(m, args.check_rows))))
    worst, unwritten = check(torch, op, x, m, n, k, plan["family"], rows)
    r["check_rows"], r["worst_err_over_tol"], r["unwritten"] = len(rows), worst, unwritten
    r["check"] = "pass" if worst <= 1.0 and unwritten == 0 else "FAIL"
    r["sets"] = len(sets)
    if r["check"] != "pass":
        return r, None
    return r, [lambda x=x: jg.gemm(ctx, prob, x.a, x.b, x.sa, x.sb, x.res, x.d, stream_of())
               for x in sets]


def sweep_cell(torch, jg, op, n, k, m, args, gen, stream_of):
    """Every candidate of the cell's plan: checked and captured one by one on one shared operand
    rotation, then timed in interleaved rounds. Returns the candidates' result dicts."""
    ldd = n // 2 if op == "linear_swiglu" else n
    ctx = jg.context()
    plan = jg.plan(ctx, jg.problem(op, m, n, k, ldd))
    jg.lib.jit_context_destroy(ctx)
    sets = rotation(torch, op, m, n, k, ldd, gen)
    cells, live = [], []  # live: (result, context, graph) of the candidates to time
    try:
        for i, c in enumerate(plan.get("candidates", [])):
            os.environ["JITGEMM_FORCE_CANDIDATE"] = f'{c["route"]}:{c["tile"]["m"]}x{c["tile"]["n"]}'
            ctx = jg.context()  # a fresh kernel table, so the forced plan is loaded
            try:
                # Planning reads the variable at every call, the capture's included; the
                # replays call nothing.
                r, calls = checked(torch, jg, ctx, op, n, k, m, args, sets, stream_of)
                g = capture(torch, calls, args.graph_iters) if calls else None
            except BaseException:
                jg.lib.jit_context_destroy(ctx)
                raise
            finally:
                del os.environ["JITGEMM_FORCE_CANDIDATE"]
            r.update(route=c["route"], modelled_us=c["modelled_us"],
                     chosen=(i == plan["chosen"]["index"]))
            cells.append(r)
            if g is None:
                jg.lib.jit_context_destroy(ctx)
            else:
                live.append((r, ctx, g))
        times, clocks = interleaved_times(torch, [entry[2] for entry in live], args.graph_iters,
                                          args.reps)
        for (r, _, _), t, clock in zip(live, times, clocks):
            r["jitgemm_us"] = statistics.median(t)
            r["jitgemm_spread"] = (max(t) - min(t)) / r["jitgemm_us"]
            r.update({"jitgemm_" + key: v for key, v in clock.items()})
    finally:
        # The graphs launch the contexts' kernels: free them before the contexts go.
        torch.cuda.synchronize()
        contexts = [entry[1] for entry in live]
        live.clear()
        for ctx in contexts:
            jg.lib.jit_context_destroy(ctx)
    return cells


def interleaved_times(torch, graphs, graph_iters, reps):
    """Per-call times of each graph over `reps` rounds of one replay each (the order rotating
    from round to round), and the clock seen during each graph's replays."""
    times = [[] for _ in graphs]
    windows = [[] for _ in graphs]
    for rnd in range(reps):
        for j in range(len(graphs)):
            i = (j + rnd) % len(graphs)
            times[i].append(replay_us(torch, graphs[i], graph_iters, windows[i]))
    clocks = [SAMPLER.during(w) if SAMPLER else {} for w in windows]
    return times, clocks


def torch_calls(torch, op, n, k, m, gen):
    """torch._scaled_mm (and the unfused epilogue) over its own operand rotation; M is padded to
    16 as _scaled_mm requires. Returns (calls, padded M)."""
    mp = -(-m // 16) * 16  # _scaled_mm wants M, N and K multiples of 16
    sets = rotation(torch, op, mp, n, k, n, gen)

    def call(x):
        y = torch._scaled_mm(x.a, x.b.t(), scale_a=x.sa.view(-1, 1), scale_b=x.sb.view(1, -1),
                             out_dtype=torch.bfloat16)
        if op == "linear_add":
            y = y + x.res
        elif op == "linear_swiglu":
            y = torch.nn.functional.silu(y[:, 0::2]) * y[:, 1::2]
        return y

    return [lambda x=x: call(x) for x in sets], mp


def write_doc(args, props, torch, copy_bw, results):
    """The JSON document of the run (--out)."""
    doc = {"bench": "torch_anchor", "commit": args.commit, "scales": args.scales,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": props.name,
           "sms": props.multi_processor_count, "torch": torch.__version__,
           "copy_bw_bytes_per_s": copy_bw, "graph_iters": args.graph_iters, "reps": args.reps,
           "results": results}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help='"op:n:k:tokens ..." (required unless --scales 128x128)')
    ap.add_argument("--scales", choices=("row", "128x128"), default="row",
                    help="128x128: the block-scaled mode (bench/torch_anchor_blockscaled.py)")
    ap.add_argument("--grouped", nargs="?", const="default",
                    help='grouped GEMM against torch._scaled_grouped_mm: "op:G:rows:n:k ..." '
                         "(rows per expert; default: the shapes of docs/kernels-fp8-grouped.md)")
    ap.add_argument("--lib", default=None, help="libjitgemm.so (default build-gpu/, else build/)")
    ap.add_argument("--out", help="write the JSON document here")
    ap.add_argument("--graph-iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--check-rows", type=int, default=48)
    ap.add_argument("--sweep", action="store_true", help="time every candidate of the models")
    ap.add_argument("--commit", default=os.environ.get("JITGEMM_COMMIT", "unknown"))
    args = ap.parse_args()
    if not args.shapes and args.scales == "row" and not args.grouped:
        ap.error("give --shapes (row scales), --scales 128x128, --grouped, or several")
    if args.sweep and args.scales != "row":
        ap.error("--sweep times the row-scaled candidates only")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lib = args.lib or next((p for p in (os.path.join(root, "build-gpu", "libjitgemm.so"),
                                        os.path.join(root, "build", "libjitgemm.so"))
                            if os.path.exists(p)), None)
    if not lib:
        raise SystemExit("torch_anchor: no libjitgemm.so; build first or pass --lib")
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("torch_anchor: PyTorch sees no CUDA device")
    jg = Jitgemm(lib)
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    stream_of = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    props = torch.cuda.get_device_properties(0)
    global SAMPLER
    SAMPLER = ClockSampler(props)
    if not SAMPLER.ok:
        print("torch_anchor: NVML not available; timings carry no SM clock", flush=True)
    copy_bw = copy_bandwidth(torch, args.graph_iters, args.reps)
    print(f"device {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size >> 20} MiB;"
          f" copy bandwidth {copy_bw / 1e12:.2f} TB/s (read + write)", flush=True)
    results, failed = [], 0
    if args.scales == "128x128":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_anchor_blockscaled as blockscaled
        helpers = {"random_e4m3": random_e4m3, "capture": capture, "rotation": rotation,
                   "checked": checked, "interleaved_times": interleaved_times}
        results, failed = blockscaled.run(torch, jg, helpers, args,
                                          parse_shapes(args.shapes or blockscaled.DEFAULT_SHAPES),
                                          gen, stream_of, copy_bw)
        write_doc(args, props, torch, copy_bw, results)
        SAMPLER.close()
        return 1 if failed else 0
    if args.grouped:
        import torch_anchor_grouped
        results, failed = torch_anchor_grouped.run(sys.modules[__name__], torch, jg, args, gen,
                                                   stream_of, copy_bw)
    for op, n, k, m in parse_shapes(args.shapes or ""):
        if args.sweep:
            cells = sweep_cell(torch, jg, op, n, k, m, args, gen, stream_of)
            for r in cells:
                failed += r["check"] != "pass"
                print(json.dumps(r), flush=True)
            timed = [c for c in cells if "jitgemm_us" in c]
            if timed:
                best = min(timed, key=lambda c: c["jitgemm_us"])
                ch = next((c for c in timed if c["chosen"]), None)
                cell = {"sweep": True, "op": op, "n": n, "k": k, "tokens": m,
                        "best": f'{best["route"]} {best["tile"]}', "best_us": best["jitgemm_us"],
                        "chosen": f'{ch["route"]} {ch["tile"]}' if ch else None,
                        "chosen_us": ch["jitgemm_us"] if ch else None,
                        "chosen_over_best": ch["jitgemm_us"] / best["jitgemm_us"] if ch else None,
                        "candidates": cells}
                results.append(cell)
                print(json.dumps({k2: v for k2, v in cell.items() if k2 != "candidates"}), flush=True)
            continue
        ctx = jg.context()
        try:
            ldd = n // 2 if op == "linear_swiglu" else n
            sets = rotation(torch, op, m, n, k, ldd, gen)
            r, calls = checked(torch, jg, ctx, op, n, k, m, args, sets, stream_of)
            if calls:
                # Both captured, then replayed in alternation: the same clocks for both.
                tcalls, r["torch_m"] = torch_calls(torch, op, n, k, m, gen)
                graphs = [capture(torch, calls, args.graph_iters),
                          capture(torch, tcalls, args.graph_iters)]
                times, clocks = interleaved_times(torch, graphs, args.graph_iters, args.reps)
                r["jitgemm_us"], r["torch_us"] = (statistics.median(t) for t in times)
                r.update({"jitgemm_" + key: v for key, v in clocks[0].items()})
                r.update({"torch_" + key: v for key, v in clocks[1].items()})
                torch.cuda.synchronize()
                del graphs, tcalls, calls
        finally:
            jg.lib.jit_context_destroy(ctx)
        failed += r["check"] != "pass"
        if "jitgemm_us" in r:
            flops = 2.0 * m * n * k
            r["jitgemm_tflops"] = flops / (r["jitgemm_us"] * 1e-6) / 1e12
            r["torch_tflops"] = flops / (r["torch_us"] * 1e-6) / 1e12
            r["speedup_over_torch"] = r["torch_us"] / r["jitgemm_us"]
            r["weight_bw_fraction"] = (n * k) / (r["jitgemm_us"] * 1e-6) / copy_bw
        results.append(r)
        print(json.dumps(r), flush=True)
    write_doc(args, props, torch, copy_bw, results)
    print("\n| shape (op T x N x K) | family tile | check err/tol | jitgemm us | torch us | speedup | TFLOP/s | weights/copy BW | SM MHz / W (jitgemm, torch) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if r.get("grouped"):
            print(torch_anchor_grouped.row(r))
            continue
        if r.get("sweep"):
            print(f'| sweep {r["op"]} {r["tokens"]}x{r["n"]}x{r["k"]} | chosen {r["chosen"]} | | '
                  f'{r["chosen_us"] or 0:.1f} | best {r["best"]} {r["best_us"]:.1f} | '
                  f'{r["chosen_over_best"] or 0:.3f}x of best | | |')
            continue
        if "jitgemm_us" not in r:
            print(f'| {r["op"]} {r["tokens"]}x{r["n"]}x{r["k"]} | {r["family"]} {r["tile"]} | '
                  f'{r["check"]} {r["worst_err_over_tol"]:.3g} | not timed | | | | |')
            continue
        print(f'| {r["op"]} {r["tokens"]}x{r["n"]}x{r["k"]} | {r["family"]} {r["tile"]} | '
              f'{r["worst_err_over_tol"]:.3g} | {r["jitgemm_us"]:.1f} | {r["torch_us"]:.1f} | '
              f'{r["speedup_over_torch"]:.3f} | {r["jitgemm_tflops"]:.0f} vs {r["torch_tflops"]:.0f} | '
              f'{r["weight_bw_fraction"]:.2f} | {r.get("jitgemm_sm_clock_mhz", "-")} / '
              f'{r.get("jitgemm_power_w", "-")}, {r.get("torch_sm_clock_mhz", "-")} / '
              f'{r.get("torch_power_w", "-")} |')
    SAMPLER.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
