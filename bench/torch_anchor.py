#!/usr/bin/env python3
"""PyTorch anchor for `jitgemm run`: time torch._scaled_mm on the same shapes.

For every shape it times the FP8 GEMM that PyTorch ships (cuBLASLt underneath), with E4M3
inputs and BF16 output, in two scale modes:
  - per-tensor: one FP32 scale for A and one for B;
  - row-wise:   FP32 scales per row of A (M x 1) and per output channel (1 x N), which is
                jitgemm's row mode.
It also times the whole operation jitgemm fuses: the row-wise GEMM followed by its epilogue in
PyTorch (the residual add for linear_add; silu(gate) * up over the interleaved gate/up columns
for linear_swiglu). The anchor ratio is jitgemm's time over that whole-operation time, so a
ratio below 1 means jitgemm is faster than PyTorch.

_scaled_mm needs M, N and K to be multiples of 16; a smaller or ragged M (1, 127) is padded up
and the padded size is reported.

Each timing is the median over individually event-timed launches after a warm-up. The L2 cache
is not flushed between them, for PyTorch and jitgemm alike.

If --jitgemm names a file holding the output of `jitgemm run` for the same shapes (as
scripts/gpu-check.sh writes it), the matching jitgemm time is put beside PyTorch's and the
ratio is computed.

    python3 bench/torch_anchor.py --shapes "linear:5120:5120:1024 linear_swiglu:27648:5120:1024"
"""
import argparse
import json
import re
import statistics
import sys
import time


def parse_shapes(text):
    shapes = []
    for word in text.split():
        op, n, k, t = word.split(":")
        if op not in ("linear", "linear_add", "linear_swiglu"):
            raise SystemExit(f"torch_anchor: unknown op {op!r} in {word!r}")
        shapes.append((op, int(n), int(k), int(t)))
    return shapes


def round16(x):
    return (x + 15) // 16 * 16


def time_us(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


RUN_LINE = re.compile(r"^run: (\S+) M=(\d+) N=(\d+) K=(\d+)")
TIME_LINE = re.compile(r"^time: median ([0-9.eE+-]+) us")


def jitgemm_times(path):
    """(op, n, k, tokens) -> microseconds, from the output of `jitgemm run`.

    Reads the text the verb prints ("run: OP M=.. N=.. K=..", then "time: median X us"), and
    also JSON lines with op/n/k/tokens and a time field, should the verb print those.
    """
    times = {}
    if not path:
        return times
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        print(f"torch_anchor: cannot read {path}: {e}", file=sys.stderr)
        return times
    current = None
    for line in lines:
        line = line.strip()
        m = RUN_LINE.match(line)
        if m:
            current = (m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(2)))
            continue
        m = TIME_LINE.match(line)
        if m and current:
            times[current] = float(m.group(1))
            current = None
            continue
        if not line.startswith("{"):
            continue
        try:
            o = json.loads(line)
        except ValueError:
            continue
        op = o.get("op") or o.get("epilogue")
        key = (op, o.get("n"), o.get("k"), o.get("tokens", o.get("m")))
        for field, scale in (("median_us", 1.0), ("us", 1.0), ("time_us", 1.0),
                             ("median_ms", 1e3), ("ms", 1e3), ("median_s", 1e6),
                             ("seconds", 1e6)):
            if isinstance(o.get(field), (int, float)):
                times[key] = o[field] * scale
                break
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help='"op:n:k:tokens ..." as scripts/gpu-check.sh')
    ap.add_argument("--jitgemm", help="output of `jitgemm run` to compare against")
    ap.add_argument("--out", help="also write the JSON document here")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    shapes = parse_shapes(args.shapes)

    try:
        import torch
    except ImportError as e:
        raise SystemExit(f"torch_anchor: PyTorch is not installed here ({e})")
    if not torch.cuda.is_available():
        raise SystemExit("torch_anchor: PyTorch sees no CUDA device")
    dev = torch.device("cuda")
    fp8 = torch.float8_e4m3fn
    jit = jitgemm_times(args.jitgemm)
    gen = torch.Generator(device=dev).manual_seed(1234)

    results = []
    for op, n, k, tokens in shapes:
        m = round16(tokens)
        a = (torch.randn(m, k, device=dev, generator=gen) * 0.5).to(fp8)
        w = (torch.randn(n, k, device=dev, generator=gen) * 0.5).to(fp8)
        b = w.t()  # [K, N], column-major, as _scaled_mm wants its second operand
        one = torch.ones((), device=dev, dtype=torch.float32)
        sa = torch.rand(m, 1, device=dev, generator=gen) + 0.5
        sb = torch.rand(1, n, device=dev, generator=gen) + 0.5
        residual = torch.randn(m, n, device=dev, generator=gen).to(torch.bfloat16)

        def per_tensor():
            return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)

        def rowwise():
            return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

        if op == "linear":
            whole = rowwise
        elif op == "linear_add":
            def whole():
                return rowwise() + residual
        else:
            def whole():
                y = rowwise()
                return torch.nn.functional.silu(y[:, 0::2]) * y[:, 1::2]

        r = {"op": op, "n": n, "k": k, "tokens": tokens, "m_padded": m}
        try:
            r["per_tensor_us"] = time_us(torch, per_tensor, args.warmup, args.iters)
            r["rowwise_us"] = time_us(torch, rowwise, args.warmup, args.iters)
            r["rowwise_op_us"] = time_us(torch, whole, args.warmup, args.iters)
            r["rowwise_tflops"] = 2.0 * m * n * k / (r["rowwise_us"] * 1e-6) / 1e12
        except RuntimeError as e:  # e.g. a scale mode this build of PyTorch lacks
            r["error"] = str(e).splitlines()[0]
        jt = jit.get((op, n, k, tokens))
        if jt is not None and "rowwise_op_us" in r:
            r["jitgemm_us"] = jt
            r["ratio_jitgemm_over_torch"] = jt / r["rowwise_op_us"]
        results.append(r)
        print(json.dumps(r), flush=True)

    doc = {
        "bench": "torch_anchor",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "iters": args.iters,
        "results": results,
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    failed = [r for r in results if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
