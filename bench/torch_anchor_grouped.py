"""The grouped mode of bench/torch_anchor.py (--grouped): jit_gemm_grouped against
torch._scaled_grouped_mm and against jitgemm's own dense kernel on the same total M, N and K,
in one process, on the same device and clocks.

Per shape op:G:rows:n:k (G experts of `rows` rows each, B [G, N, K]):

  1. inputs: A [G * rows, K] E4M3 (finite, non-zero codes), B [G, N, K] E4M3, row scales that
     keep outputs O(1..10) (scale_a [G * rows], scale_b [G, N]); offsets, the device int32
     cumulative group starts [G + 1] (torch's offs are the ends, offsets[1:]);
  2. one call of each: jitgemm grouped (contiguous layout) and torch._scaled_grouped_mm (row-wise,
     mat_b the [G, K, N] transpose of [G, N, K], BF16 out; for linear_swiglu torch then applies
     silu(gate) * up to the interleaved columns, the work jitgemm fuses). Both outputs are
     checked against an FP64 reference (numpy) on sampled rows of every expert, first, last and
     random, with the wgmma tolerance (half a BF16 ulp plus 2^-12 of sum |a b sa sb|); jitgemm's
     whole D must have been written. A shape whose jitgemm check fails is not timed;
  3. jitgemm grouped, torch grouped and jitgemm dense (jit_gemm of A [G * rows, K] by expert 0's
     B, the same FLOPs with one weight matrix) are captured as CUDA graphs of --graph-iters calls
     over operand sets rotated so that their bytes pass three times the L2 (at most 4 sets), and
     replayed in alternation --reps times; the median per call is reported with TFLOP/s,
     2 * G * rows * N * K / t.
"""
import ctypes
import json
import random
import statistics

# The shapes of docs/kernels-fp8-grouped.md ("What users have today"): op:G:rows:n:k.
DEFAULT = ("linear:4:8192:4096:7168 linear:8:4096:7168:2048 linear:32:256:4096:7168 "
           "linear:256:32:4096:7168 linear:8:64:7168:2048")
GROUPS_CONTIGUOUS = 1


def parse(text):
    shapes = []
    for word in (DEFAULT if text == "default" else text).split():
        op, g, rows, n, k = word.split(":")
        if op not in ("linear", "linear_swiglu"):
            raise SystemExit(f"torch_anchor: grouped ops are linear and linear_swiglu, not {op!r}")
        shapes.append((op, int(g), int(rows), int(n), int(k)))
    return shapes


class GroupedInputs:
    """One operand set of a grouped shape, and its dense counterpart's B (expert 0's)."""

    def __init__(self, ta, torch, op, g, rows, n, k, gen):
        m = g * rows
        self.a = ta.random_e4m3(torch, m, k, gen)
        self.b = ta.random_e4m3(torch, g * n, k, gen).view(g, n, k)
        rms_a = self.a.float().pow(2).mean(dim=1).sqrt()
        rms_b = self.b.float().pow(2).mean(dim=2).sqrt()
        self.sa = ((torch.rand(m, device="cuda", generator=gen) * 1.5 + 0.5) * 4.0 /
                   (rms_a * k ** 0.5)).float().contiguous()
        self.sb = ((torch.rand(g, n, device="cuda", generator=gen) * 1.5 + 0.5) /
                   rms_b).float().contiguous()
        self.offsets = torch.arange(0, m + 1, rows, dtype=torch.int32, device="cuda")
        self.ends = self.offsets[1:].clone()  # torch's offs: the cumulative group ends
        self.nout = n // 2 if op == "linear_swiglu" else n
        self.d = torch.empty(m, self.nout, dtype=torch.bfloat16, device="cuda")
        self.dense_d = torch.empty(m, self.nout, dtype=torch.bfloat16, device="cuda")


def grouped_call(ta, jg, ctx, op, g, rows, n, k, x, stream_of, expected):
    p = ta.init_struct(jg.lib.jit_problem_init, ta.Problem)
    p.m, p.n, p.k, p.epilogue = g * rows, n, k, ta.EPILOGUES[op]
    p.groups, p.layout, p.expected_m = g, GROUPS_CONTIGUOUS, expected
    o = ta.init_struct(jg.lib.jit_operands_init, ta.Operands)
    o.a, o.b, o.scale_a, o.scale_b = x.a.data_ptr(), x.b.data_ptr(), x.sa.data_ptr(), x.sb.data_ptr()
    o.d, o.group_offsets = x.d.data_ptr(), x.offsets.data_ptr()
    st = jg.lib.jit_gemm_grouped(ctx, ctypes.byref(p), ctypes.byref(o), stream_of())
    if st != 0:
        raise RuntimeError(f"jit_gemm_grouped: {jg.lib.jit_status_name(st).decode()}: "
                           f"{jg.lib.jit_last_error(ctx).decode()}")


def grouped_plan(ta, jg, ctx, op, g, rows, n, k):
    p = ta.init_struct(jg.lib.jit_problem_init, ta.Problem)
    p.m, p.n, p.k, p.epilogue = g * rows, n, k, ta.EPILOGUES[op]
    p.groups, p.layout, p.expected_m = g, GROUPS_CONTIGUOUS, rows
    return jg.plan(ctx, p)


def torch_call(torch, op, x):
    y = torch._scaled_grouped_mm(x.a, x.b.transpose(-2, -1), x.sa, x.sb, offs=x.ends,
                                 out_dtype=torch.bfloat16)
    if op == "linear_swiglu":
        y = torch.nn.functional.silu(y[:, 0::2]) * y[:, 1::2]
    return y


def check(torch, op, x, got, g, rows, n, k, samples):
    """Worst |err| / tolerance of `got` ([G * rows, Nout]) over sampled rows of every expert."""
    import numpy as np
    worst = 0.0
    rng = random.Random(g * 131 + rows)
    for e in range(g):
        picks = sorted(set([0, rows - 1] + rng.sample(range(rows), min(rows, samples))))
        r = [e * rows + i for i in picks]
        a = x.a[r].float().double().cpu().numpy()
        b = x.b[e].float().double().cpu().numpy()
        sa = x.sa[r].double().cpu().numpy()[:, None]
        sb = x.sb[e].double().cpu().numpy()[None, :]
        acc, mag = (a @ b.T) * sa * sb, (np.abs(a) @ np.abs(b).T) * sa * sb
        if op == "linear_swiglu":
            gt, u, gm, um = acc[:, 0::2], acc[:, 1::2], mag[:, 0::2], mag[:, 1::2]
            s = np.where(gt >= 0, 1.0 / (1.0 + np.exp(-np.abs(gt))),
                         np.exp(-np.abs(gt)) / (1.0 + np.exp(-np.abs(gt))))
            acc = gt * s * u
            mag = np.abs(u * s * (1.0 + gt * (1.0 - s))) * gm + np.abs(gt * s) * um
        err = np.abs(got[r].double().cpu().numpy() - acc)
        tol = np.abs(acc) * 2.0 ** -8 + 2.0 ** -12 * mag + 2.0 ** -100
        worst = max(worst, float(np.where(np.isfinite(err), err / tol, np.inf).max()))
    return worst


def one_shape(ta, torch, jg, args, gen, stream_of, op, g, rows, n, k):
    m = g * rows
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per = m * k + g * n * k + 2 * m * n
    sets = [GroupedInputs(ta, torch, op, g, rows, n, k, gen)
            for _ in range(max(1, min(4, -(-3 * l2 // per))))]
    ctx = jg.context()
    r = {"grouped": True, "op": op, "groups": g, "rows": rows, "n": n, "k": k}
    try:
        plan = grouped_plan(ta, jg, ctx, op, g, rows, n, k)
        r["family"], r["route"] = plan["family"], plan["grouped"]["route"]
        r["tile"] = f'{plan["tile"]["m"]}x{plan["tile"]["n"]}'
        x = sets[0]
        x.d.view(torch.int16).fill_(-1)
        grouped_call(ta, jg, ctx, op, g, rows, n, k, x, stream_of, rows)
        torch.cuda.synchronize()
        r["unwritten"] = int((x.d.view(torch.int16) == -1).sum().item())
        samples = max(2, args.check_rows // g)
        r["worst_err_over_tol"] = check(torch, op, x, x.d, g, rows, n, k, samples)
        r["torch_worst_err_over_tol"] = check(torch, op, x, torch_call(torch, op, x), g, rows, n,
                                              k, samples)
        r["check"] = "pass" if r["worst_err_over_tol"] <= 1.0 and r["unwritten"] == 0 else "FAIL"
        if r["check"] != "pass":
            return r
        dense = jg.problem(op, m, n, k, n // 2 if op == "linear_swiglu" else n)
        calls = [[lambda x=x: grouped_call(ta, jg, ctx, op, g, rows, n, k, x, stream_of, rows)
                  for x in sets],
                 [lambda x=x: torch_call(torch, op, x) for x in sets],
                 [lambda x=x: jg.gemm(ctx, dense, x.a, x.b[0], x.sa, x.sb[0], None, x.dense_d,
                                      stream_of()) for x in sets]]
        graphs = [ta.capture(torch, c, args.graph_iters) for c in calls]
        times, clocks = ta.interleaved_times(torch, graphs, args.graph_iters, args.reps)
        for key, t, clock in zip(("jitgemm", "torch", "dense"), times, clocks):
            r[key + "_us"] = statistics.median(t)
            r[key + "_tflops"] = 2.0 * m * n * k / (r[key + "_us"] * 1e-6) / 1e12
            r.update({f"{key}_{name}": v for name, v in clock.items()})
        r["speedup_over_torch"] = r["torch_us"] / r["jitgemm_us"]
        r["speedup_over_dense"] = r["dense_us"] / r["jitgemm_us"]
        torch.cuda.synchronize()
        del graphs, calls
    finally:
        torch.cuda.synchronize()
        jg.lib.jit_context_destroy(ctx)
    return r


def run(ta, torch, jg, args, gen, stream_of, copy_bw):
    """Every --grouped shape; returns (results, how many failed their check)."""
    results, failed = [], 0
    for op, g, rows, n, k in parse(args.grouped):
        r = one_shape(ta, torch, jg, args, gen, stream_of, op, g, rows, n, k)
        if "jitgemm_us" in r:
            r["weight_bw_fraction"] = g * n * k / (r["jitgemm_us"] * 1e-6) / copy_bw
        failed += r["check"] != "pass"
        results.append(r)
        print(json.dumps(r), flush=True)
    return results, failed


def row(r):
    """One line of torch_anchor's summary table."""
    shape = f'grouped {r["op"]} {r["groups"]}x{r["rows"]} x {r["n"]}x{r["k"]}'
    if "jitgemm_us" not in r:
        return (f'| {shape} | {r.get("route", "?")} {r.get("tile", "?")} | {r["check"]} '
                f'{r.get("worst_err_over_tol", float("nan")):.3g} | not timed | | | | |')
    return (f'| {shape} | {r["route"]} {r["tile"]} | {r["worst_err_over_tol"]:.3g} '
            f'(torch {r["torch_worst_err_over_tol"]:.3g}) | {r["jitgemm_us"]:.1f} | '
            f'{r["torch_us"]:.1f} | {r["speedup_over_torch"]:.3f} | {r["jitgemm_tflops"]:.0f} vs '
            f'{r["torch_tflops"]:.0f} (dense {r["dense_us"]:.1f} us) | '
            f'{r["weight_bw_fraction"]:.2f} | {r.get("jitgemm_sm_clock_mhz", "-")} |')
