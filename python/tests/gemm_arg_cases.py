"""gemm's argument checks, which run before anything reaches the library, as plain data so
that pytest (test_gemm_args.py) and the runner without pytest (run_gpu.py, through
gpu_cases.py) check the same cases. CPU tensors reach every one of them: devices are checked
last."""

import jitgemm

M, N, K = 17, 64, 128


def _args(torch, **changes):
    f8 = torch.float8_e4m3fn
    a = dict(a=torch.ones(M, K).to(f8), b=torch.ones(N, K).to(f8), scale_a=torch.ones(M),
             scale_b=torch.ones(N))
    a.update(changes)
    return a


def _k256(torch):
    """Operands with K = 256, two 128-K groups, and 128x128 scale_b for them."""
    f8 = torch.float8_e4m3fn
    return dict(a=torch.ones(M, 256).to(f8), b=torch.ones(N, 256).to(f8),
                scale_b=torch.ones((N + 127) // 128, 2))


def cases(torch):
    """(id, gemm's keyword arguments, the exception, words its message must hold)."""
    f8 = torch.float8_e4m3fn
    bf16 = torch.bfloat16
    mk = [
        ("not-a-tensor", dict(a=[[1.0]]), TypeError, ["a must be a torch.Tensor, got list"]),
        ("a-float16", dict(a=torch.ones(M, K, dtype=torch.float16)), TypeError,
         ["a must be torch.float8_e4m3fn, got torch.float16"]),
        ("b-e5m2", dict(b=torch.ones(N, K).to(torch.float8_e5m2)), TypeError,
         ["b must be torch.float8_e4m3fn"]),
        ("scale-float64", dict(scale_a=torch.ones(M, dtype=torch.float64)), TypeError,
         ["scale_a must be torch.float32, got torch.float64"]),
        ("a-3d", dict(a=torch.ones(M, K, 1).to(f8)), ValueError, ["a and b must be 2-D"]),
        ("k-differs", dict(b=torch.ones(N, K + 16).to(f8)), ValueError, ["their K differ"]),
        ("scale-a-count", dict(scale_a=torch.ones(M + 1)), ValueError,
         ["scale_a must hold one float32 per row of a"]),
        ("scale-b-shape", dict(scale_b=torch.ones(N, 2)), ValueError,
         ["scale_b must hold one float32 per row of b"]),
        ("scale-strided", dict(scale_b=torch.ones(2 * N)[::2]), ValueError,
         ["scale_b must be contiguous"]),
        ("epilogue-word", dict(epilogue="gelu"), ValueError,
         ["epilogue must be one of linear, linear_add, linear_swiglu"]),
        ("add-no-residual", dict(epilogue="linear_add"), ValueError, ["linear_add needs residual"]),
        ("residual-for-linear", dict(residual=torch.ones(M, N, dtype=bf16)), ValueError,
         ["residual is only read by linear_add"]),
        ("residual-dtype", dict(epilogue="linear_add", residual=torch.ones(M, N)), TypeError,
         ["residual must be torch.bfloat16, got torch.float32"]),
        ("residual-shape", dict(epilogue="linear_add", residual=torch.ones(M, N // 2, dtype=bf16)),
         ValueError, ["residual must have shape [M, N] = (17, 64)"]),
        ("swiglu-odd", dict(epilogue="linear_swiglu", b=torch.ones(N + 1, K).to(f8),
                            scale_b=torch.ones(N + 1)),
         ValueError, ["linear_swiglu needs an even N"]),
        ("out-dtype", dict(out=torch.empty(M, N, dtype=torch.float16)), TypeError,
         ["out must be torch.bfloat16, got torch.float16"]),
        ("out-shape-swiglu", dict(epilogue="linear_swiglu", out=torch.empty(M, N, dtype=bf16)),
         ValueError, ["out must have shape [M, Nout] = (17, 32), got (17, 64)"]),
        ("out-columns", dict(out=torch.empty(N, M, dtype=bf16).t()), ValueError,
         ["out must have contiguous rows"]),
        ("a-transposed", dict(a=torch.ones(K, M).to(f8).t()), ValueError,
         ["a must have contiguous rows"]),
        ("cpu", dict(), ValueError, ["a must be on a CUDA device, got cpu"]),
        ("scales-word", dict(scales="256x256"), ValueError, ["scales must be one of row, 128x128"]),
        ("block-sfa-1d", dict(scales="128x128"), ValueError,
         ["scale_a must have shape [M, ceil(K/128)] = (17, 1), got (17,)"]),
        ("block-sfb-per-channel", dict(scales="128x128", scale_a=torch.ones(M, 1)), ValueError,
         ["scale_b must have shape [ceil(N/128), ceil(K/128)] = (1, 1), got (64,)"]),
        ("block-sfa-strided", dict(_k256(torch), scales="128x128",
                                   scale_a=torch.ones(M, 4)[:, ::2]), ValueError,
         ["scale_a must be k-major (stride(1) == 1) or m-major (stride(0) == 1)"]),
        ("block-sfb-strided", dict(_k256(torch), scales="128x128", scale_a=torch.ones(M, 2),
                                   b=torch.ones(256, 256).to(f8),
                                   scale_b=torch.ones(2, 4)[:, ::2]), ValueError,
         ["scale_b must be contiguous"]),
        # Accepted up to the device check, both layouts of SFA:
        ("block-k-major-cpu", dict(_k256(torch), scales="128x128", scale_a=torch.ones(M, 2)),
         ValueError, ["a must be on a CUDA device, got cpu"]),
        ("block-m-major-cpu", dict(_k256(torch), scales="128x128",
                                   scale_a=torch.ones(2, M).t()), ValueError,
         ["a must be on a CUDA device, got cpu"]),
        ("block-m-major-padded-cpu", dict(_k256(torch), scales="128x128",
                                          scale_a=torch.ones(2, M + 3)[:, :M].t()), ValueError,
         ["a must be on a CUDA device, got cpu"]),
    ]
    return [(name, _args(torch, **changes), exc, words) for name, changes, exc, words in mk]


def check(kwargs, exc, words):
    try:
        jitgemm.gemm(**kwargs)
    except exc as e:
        for w in words:
            assert w in str(e), "%r not in %r" % (w, str(e))
    else:
        raise AssertionError("gemm accepted it; expected %s" % exc.__name__)


def check_all():
    import torch

    for name, kwargs, exc, words in cases(torch):
        try:
            check(kwargs, exc, words)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (name, e)) from None
