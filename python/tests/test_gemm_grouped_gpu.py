"""jitgemm.gemm_grouped on the GPU: both layouts and both epilogues against an FP64 reference
computed per expert from the same E4M3 inputs, rows of no expert left as they were, and a CUDA
graph replayed with new routing written into the same offsets tensor. Skipped without a GPU.

Tolerance: half a bf16 ulp of the result plus 2^-12 of the sum of |terms| (FP32 accumulation
promoted every 128 K, as for jitgemm.gemm: gpu_cases.py)."""

import itertools

import pytest

import jitgemm

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this PyTorch has no float8_e4m3fn", allow_module_level=True)
if torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("grouped GEMM runs on sm_90a", allow_module_level=True)

G, N, K = 8, 384, 1552


def e4m3(shape, gen):
    mag = torch.randint(1, 127, shape, dtype=torch.uint8, device="cuda", generator=gen)
    sign = torch.randint(0, 2, shape, dtype=torch.uint8, device="cuda", generator=gen) << 7
    return (mag | sign).view(torch.float8_e4m3fn)


def reference(a2, b, sa, sb, rows_of, epilogue):
    """FP64 result and magnitude for the rows of each expert: rows_of[g] = (first row, count)
    of a2 (a as [rows, K])."""
    nout = N // 2 if epilogue == "linear_swiglu" else N
    out = torch.full((a2.shape[0], nout), float("nan"), dtype=torch.float64, device="cuda")
    mag = torch.zeros_like(out)
    for g, (r0, cnt) in enumerate(rows_of):
        if cnt == 0:
            continue
        x = a2[r0:r0 + cnt].float().double()
        w = b[g].float().double()
        scale = sa[r0:r0 + cnt, None].double() * sb[g][None, :].double()
        acc = (x @ w.T) * scale
        acc_mag = (x.abs() @ w.abs().T) * scale.abs()
        if epilogue == "linear_swiglu":
            gate, up = acc[:, 0::2], acc[:, 1::2]
            silu = gate * torch.sigmoid(gate)
            s = torch.sigmoid(gate)
            out[r0:r0 + cnt] = silu * up
            mag[r0:r0 + cnt] = ((up * s * (1 + gate * (1 - s))).abs() * acc_mag[:, 0::2]
                                + silu.abs() * acc_mag[:, 1::2])
        else:
            out[r0:r0 + cnt] = acc
            mag[r0:r0 + cnt] = acc_mag
    return out, mag


def check(out2, ref, mag, rows_of):
    covered = torch.zeros(out2.shape[0], dtype=torch.bool, device="cuda")
    for r0, cnt in rows_of:
        covered[r0:r0 + cnt] = True
    got = out2.double()
    tol = ref.abs() * 2.0 ** -8 + mag * 2.0 ** -12 + 2.0 ** -100
    err = (got - ref).abs()
    bad = covered[:, None] & ~(err <= tol)
    assert int(bad.sum()) == 0, "%d outputs out of tolerance" % int(bad.sum())
    untouched = out2[~covered].view(torch.int16)
    assert bool((untouched == -1).all()), "rows of no expert were written"


def inputs(gen, rows):
    a = e4m3((rows, K), gen)
    b = e4m3((G, N, K), gen)
    sa = torch.rand(rows, device="cuda", generator=gen) * 0.02 + 0.01
    sb = torch.rand(G, N, device="cuda", generator=gen) * 0.02 + 0.01
    return a, b, sa, sb


@pytest.mark.parametrize("epilogue", ["linear", "linear_swiglu"])
def test_contiguous(epilogue):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    counts = [0, 1, 127, 300, 0, 129, 5, 64]
    capacity = sum(counts) + 20
    a, b, sa, sb = inputs(gen, capacity)
    offsets = torch.tensor([0] + list(itertools.accumulate(counts)), dtype=torch.int32,
                           device="cuda")
    nout = N // 2 if epilogue == "linear_swiglu" else N
    out = torch.full((capacity, nout), float("nan"), dtype=torch.bfloat16, device="cuda")
    out.view(torch.int16).fill_(-1)
    jitgemm.gemm_grouped(a, b, sa, sb, offsets=offsets, out=out, epilogue=epilogue)
    rows_of = [(int(offsets[g]), counts[g]) for g in range(G)]
    ref, mag = reference(a, b, sa, sb, rows_of, epilogue)
    check(out, ref, mag, rows_of)


@pytest.mark.parametrize("epilogue", ["linear", "linear_swiglu"])
def test_masked(epilogue):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(2)
    max_m = 140
    counts = [0, 1, 140, 77, 0, 129, 5, 64]
    a, b, sa, sb = inputs(gen, G * max_m)
    nout = N // 2 if epilogue == "linear_swiglu" else N
    out = torch.empty((G, max_m, nout), dtype=torch.bfloat16, device="cuda")
    out.view(torch.int16).fill_(-1)
    cnt = torch.tensor(counts, dtype=torch.int32, device="cuda")
    jitgemm.gemm_grouped(a.view(G, max_m, K), b, sa.view(G, max_m), sb, counts=cnt, out=out,
                         epilogue=epilogue)
    rows_of = [(g * max_m, counts[g]) for g in range(G)]
    ref, mag = reference(a, b, sa, sb, rows_of, epilogue)
    check(out.view(G * max_m, nout), ref, mag, rows_of)


def test_graph_replays_with_new_offsets():
    gen = torch.Generator(device="cuda")
    gen.manual_seed(3)
    capacity = 2000
    a, b, sa, sb = inputs(gen, capacity)
    offsets = torch.zeros(G + 1, dtype=torch.int32, device="cuda")
    out = torch.empty((capacity, N), dtype=torch.bfloat16, device="cuda")
    jitgemm.gemm_grouped(a, b, sa, sb, offsets=offsets, out=out, expected_m=100)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        jitgemm.gemm_grouped(a, b, sa, sb, offsets=offsets, out=out, expected_m=100)
    for step in range(4):
        counts = torch.randint(0, 250, (G,), generator=torch.Generator().manual_seed(step))
        counts[step] = 0
        offsets.copy_(torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).int())
        out.view(torch.int16).fill_(-1)
        graph.replay()
        torch.cuda.synchronize()
        rows_of = [(int(offsets[g]), int(counts[g])) for g in range(G)]
        ref, mag = reference(a, b, sa, sb, rows_of, "linear")
        check(out, ref, mag, rows_of)
