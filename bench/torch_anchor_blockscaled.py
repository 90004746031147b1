"""The 128x128 block-scaled mode of bench/torch_anchor.py (--scales 128x128).

Per shape, in the anchor's process and on its stream:

  1. fresh random E4M3 A [M, K] and B [N, K] (no zero, no NaN codes), FP32 scales SFA per
     1x128 group of A, stored m-major ([M, K/128] with strides (1, M), the layout DeepGEMM and
     torch use) and SFB per 128x128 block of B ([N/128, K/128] row-major), each a normalisation
     that keeps the outputs O(1..10) times 2^-2..2^2 per group, so a misplaced scale shows;
  2. one jitgemm call (scale mode 128x128, SFA m-major) on D poisoned with BF16 NaN: every
     output must have been written and sampled rows (first, last, --check-rows random) must
     match a host FP64 reference from the same bytes and floats, within half a BF16 ulp plus
     2^-12 * mag (FP8 tensor-core accumulation promoted every 128 K; kernel_src/reference/);
  3. torch._scaled_mm's blockwise path on the same operands: scale_a the m-major [M, K/128]
     tensor, B as [K, N] column-major (b.t()), scale_b the [N/128, K/128] tensor transposed,
     out_dtype BF16; checked against the same reference. Where torch refuses the call (M = 1:
     cuBLASLt answers CUBLAS_STATUS_NOT_SUPPORTED) its error is recorded and jitgemm is still
     timed;
  4. at M >= 4096 also the row-scaled jitgemm kernel on the same shape (its own inputs, checked
     the anchor's way), for the cost of block scaling;
  5. only what passed its check: each captured as a CUDA graph of --graph-iters calls over an
     operand rotation of at least three times the L2 cache, the graphs replayed in alternation
     --reps times (the same clocks for all), the median per call reported.
"""
import random
import statistics

DEFAULT_SHAPES = " ".join(
    f"linear:{n}:{k}:{m}" for m in (1, 16, 64, 128, 4096)
    for n, k in ((2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
                 (7168, 2048), (5120, 17408)))

SCALE_BLOCK_1X128_128X128 = 6  # JIT_SCALE_BLOCK_1X128_128X128 (api/jitgemm.h)
SFA_M_MAJOR = 1


class BlockInputs:
    """One operand set of the 128x128 format."""

    def __init__(self, torch, h, op, m, n, k, gen):
        kb, nb = -(-k // 128), -(-n // 128)
        self.a = h["random_e4m3"](torch, m, k, gen)
        self.b = h["random_e4m3"](torch, n, k, gen)
        rms_a = self.a.float().pow(2).mean(dim=1).sqrt()
        rms_b = float(self.b.float().pow(2).mean().sqrt())
        exp_a = torch.randint(-2, 3, (kb, m), device="cuda", generator=gen).float()
        exp_b = torch.randint(-2, 3, (nb, kb), device="cuda", generator=gen).float()
        ua = torch.rand(kb, m, device="cuda", generator=gen) * 1.5 + 0.5
        ub = torch.rand(nb, kb, device="cuda", generator=gen) * 1.5 + 0.5
        # m-major SFA: a [K/128, M] tensor, used as its transpose [M, K/128] with strides (1, M).
        sfa_t = (torch.exp2(exp_a) * ua * (4.0 / (rms_a * k ** 0.5))[None, :]).float().contiguous()
        self.sfa = sfa_t.t()
        self.sfb = (torch.exp2(exp_b) * ub / rms_b).float().contiguous()
        self.res = None
        if op == "linear_add":
            self.res = ((torch.rand(m, n, device="cuda", generator=gen) * 8 - 4)
                        .to(torch.bfloat16).contiguous())
        self.nout = n // 2 if op == "linear_swiglu" else n
        self.d = torch.empty(m, self.nout, dtype=torch.bfloat16, device="cuda")


def block_rotation(torch, h, op, m, n, k, gen):
    """Enough operand sets that their bytes exceed three times the L2 cache (at most 8)."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per = m * k + n * k + 2 * m * n * (2 if op == "linear_add" else 1)
    count = max(1, min(8, -(-3 * l2 // per)))
    return [BlockInputs(torch, h, op, m, n, k, gen) for _ in range(count)]


def reference(x, op, rows, n, k):
    """FP64 reference and accumulation magnitude of the sampled rows, from the same bytes."""
    import numpy as np
    a = x.a[rows].float().double().cpu().numpy()
    b = x.b.float().double().cpu().numpy()
    sfa = x.sfa[rows].double().cpu().numpy()
    sfb = x.sfb.double().cpu().numpy()
    acc = np.zeros((len(rows), n))
    mag = np.zeros((len(rows), n))
    for g in range(sfb.shape[1]):
        blk = slice(128 * g, min(128 * (g + 1), k))
        col = np.repeat(sfb[:, g], 128)[:n]
        sc = sfa[:, g:g + 1] * col[None, :]
        acc += (a[:, blk] @ b[:, blk].T) * sc
        mag += (np.abs(a[:, blk]) @ np.abs(b[:, blk]).T) * np.abs(sc)
    if op == "linear":
        return acc, mag
    if op == "linear_add":
        r = x.res[rows].double().cpu().numpy()
        return acc + r, mag + np.abs(r)
    g, u, gm, um = acc[:, 0::2], acc[:, 1::2], mag[:, 0::2], mag[:, 1::2]
    s = np.where(g >= 0, 1.0 / (1.0 + np.exp(-np.abs(g))),
                 np.exp(-np.abs(g)) / (1.0 + np.exp(-np.abs(g))))
    silu = g * s
    return silu * u, np.abs(u * s * (1.0 + g * (1.0 - s))) * gm + np.abs(silu) * um


def compare(torch, got, ref, mag):
    """Worst |err| / tolerance (FP8 tensor-core accumulation) and the unwritten outputs."""
    import numpy as np
    unwritten = int((got.view(torch.int16) == -1).sum().item())
    g = got.double().cpu().numpy()
    err = np.abs(g - ref)
    tol = np.abs(ref) * 2.0 ** -8 + 2.0 ** -10 * mag + 2.0 ** -100
    ratio = np.where(np.isfinite(err), err / tol, np.inf)
    return float(ratio.max()), unwritten


def torch_block(torch, op, x):
    y = torch._scaled_mm(x.a, x.b.t(), scale_a=x.sfa, scale_b=x.sfb.t(),
                         out_dtype=torch.bfloat16)
    if op == "linear_add":
        y = y + x.res
    elif op == "linear_swiglu":
        y = torch.nn.functional.silu(y[:, 0::2]) * y[:, 1::2]
    return y


def one_shape(torch, jg, h, args, op, n, k, m, gen, stream_of, copy_bw):
    ctx = jg.context()
    graphs, names = [], []
    rctx = None
    try:
        prob = jg.problem(op, m, n, k, n // 2 if op == "linear_swiglu" else n)
        prob.scale_mode, prob.sfa_layout, prob.ld_sfa = SCALE_BLOCK_1X128_128X128, SFA_M_MAJOR, m
        plan = jg.plan(ctx, prob)
        r = {"scales": "128x128", "op": op, "n": n, "k": k, "tokens": m, "family": plan["family"],
             "route": plan["chosen"]["route"] if "chosen" in plan else None,
             "tile": f'{plan["tile"]["m"]}x{plan["tile"]["n"]}', "stages": plan["stages"]}
        sets = block_rotation(torch, h, op, m, n, k, gen)
        x = sets[0]
        x.d.view(torch.int16).fill_(-1)
        jg.gemm(ctx, prob, x.a, x.b, x.sfa, x.sfb, x.res, x.d, stream_of())
        torch.cuda.synchronize()
        rows = sorted(set([0, m - 1] + random.Random(m * 7 + n).sample(range(m),
                                                                         min(m, args.check_rows))))
        ref, mag = reference(x, op, rows, n, k)
        r["check_rows"] = len(rows)
        r["worst_err_over_tol"], r["unwritten"] = compare(torch, x.d[rows], ref, mag)
        r["check"] = "pass" if r["worst_err_over_tol"] <= 1.0 and r["unwritten"] == 0 else "FAIL"
        r["sets"] = len(sets)
        if r["check"] == "pass":
            graphs.append(h["capture"](torch, [lambda x=x: jg.gemm(
                ctx, prob, x.a, x.b, x.sfa, x.sfb, x.res, x.d, stream_of()) for x in sets],
                args.graph_iters))
            names.append("jitgemm")
        try:
            y = torch_block(torch, op, x)
            torch.cuda.synchronize()
            worst, _ = compare(torch, y[rows], ref, mag)
            r["torch_worst_err_over_tol"] = worst
            r["torch_check"] = "pass" if worst <= 1.0 else "FAIL"
            if worst <= 1.0:
                graphs.append(h["capture"](torch, [lambda x=x: torch_block(torch, op, x)
                                                   for x in sets], args.graph_iters))
                names.append("torch")
        except Exception as e:  # torch refuses some shapes (M = 1); record it, time jitgemm
            r["torch_error"] = (str(e).splitlines() or [type(e).__name__])[0][:200]
        if m >= 4096 and r["check"] == "pass":
            rctx = jg.context()
            rsets = h["rotation"](torch, op, m, n, k, n // 2 if op == "linear_swiglu" else n, gen)
            rr, rcalls = h["checked"](torch, jg, rctx, op, n, k, m, args, rsets, stream_of)
            r["rowscaled_check"] = rr["check"]
            r["rowscaled_tile"] = rr["tile"]
            if rcalls:
                graphs.append(h["capture"](torch, rcalls, args.graph_iters))
                names.append("rowscaled")
        if graphs:
            times, clocks = h["interleaved_times"](torch, graphs, args.graph_iters, args.reps)
            for name, t, clock in zip(names, times, clocks):
                r[name + "_us"] = statistics.median(t)
                r.update({name + "_" + key: v for key, v in clock.items()})
        torch.cuda.synchronize()
        del graphs
    finally:
        jg.lib.jit_context_destroy(ctx)
        if rctx is not None:
            jg.lib.jit_context_destroy(rctx)
    flops = 2.0 * m * n * k
    kb, nb = -(-k // 128), -(-n // 128)
    weight_bytes = n * k + 4 * nb * kb + 4 * m * kb
    if "jitgemm_us" in r:
        r["jitgemm_tflops"] = flops / (r["jitgemm_us"] * 1e-6) / 1e12
        r["weight_scale_bw_fraction"] = weight_bytes / (r["jitgemm_us"] * 1e-6) / copy_bw
    if "torch_us" in r:
        r["torch_tflops"] = flops / (r["torch_us"] * 1e-6) / 1e12
        if "jitgemm_us" in r:
            r["speedup_over_torch"] = r["torch_us"] / r["jitgemm_us"]
    if "rowscaled_us" in r and "jitgemm_us" in r:
        r["block_over_rowscaled"] = r["jitgemm_us"] / r["rowscaled_us"]
    return r


def run(torch, jg, h, args, shapes, gen, stream_of, copy_bw):
    """Every shape; returns (results, how many checks failed)."""
    import json
    results, failed = [], 0
    for op, n, k, m in shapes:
        r = one_shape(torch, jg, h, args, op, n, k, m, gen, stream_of, copy_bw)
        failed += r["check"] != "pass" or r.get("torch_check") == "FAIL"
        results.append(r)
        print(json.dumps(r), flush=True)
    print("\n| shape (op T x N x K) | route tile | check err/tol | jitgemm us | torch us | speedup |"
          " TFLOP/s | weights+scales/copy BW | row-scaled us (block/row) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        torch_us = f'{r["torch_us"]:.1f}' if "torch_us" in r else r.get("torch_error", "-")[:40]
        row = (f'{r["rowscaled_us"]:.1f} ({r["block_over_rowscaled"]:.3f})'
               if "block_over_rowscaled" in r else "-")
        jus = f'{r["jitgemm_us"]:.1f}' if "jitgemm_us" in r else "not timed"
        print(f'| {r["op"]} {r["tokens"]}x{r["n"]}x{r["k"]} | {r["route"]} {r["tile"]} | '
              f'{r["check"]} {r["worst_err_over_tol"]:.3g} | {jus} | {torch_us} | '
              f'{r.get("speedup_over_torch", 0):.3f} | {r.get("jitgemm_tflops", 0):.0f} vs '
              f'{r.get("torch_tflops", 0):.0f} | {r.get("weight_scale_bw_fraction", 0):.2f} | '
              f'{row} |')
    return results, failed
