"""quantize_fp8_1x128's argument checks, which run before anything reaches the library, as plain
data so that pytest (test_quantize_args.py) and the runner without pytest (run_gpu.py, through
quantize_gpu_cases.py) check the same cases. CPU tensors reach every one of them: the device
is checked last."""

import jitgemm

M, K = 17, 272  # three groups, the last of 16


def cases(torch):
    """(id, keyword arguments, the exception, words its message must hold)."""
    bf16 = torch.bfloat16

    def x(m=M, k=K, **kw):
        return torch.ones(m, k, dtype=bf16, **kw)

    return [
        ("not-a-tensor", dict(x=[[1.0]]), TypeError, ["x must be a torch.Tensor, got list"]),
        ("x-float32", dict(x=torch.ones(M, K)), TypeError,
         ["x must be torch.bfloat16, got torch.float32"]),
        ("x-1d", dict(x=torch.ones(K, dtype=bf16)), ValueError, ["x must be 2-D [M, K]"]),
        ("k-not-16", dict(x=x(k=264)), ValueError, ["K must be a multiple of 16", "K = 264"]),
        ("x-transposed", dict(x=x(m=K, k=M + 15).t()), ValueError,
         ["x must have contiguous rows"]),
        ("x-row-stride", dict(x=torch.ones(M, K + 4, dtype=bf16)[:, :K]), ValueError,
         ["row stride 276 must be at least K = 272 and a multiple of 8"]),
        ("layout-word", dict(x=x(), layout="n-major"), ValueError,
         ["layout must be one of k-major, m-major"]),
        ("ld-sfa-k-major", dict(x=x(), ld_sfa=2), ValueError,
         ["ld_sfa must be an integer >= 3 (ceil(K/128))"]),
        ("ld-sfa-m-major", dict(x=x(), layout="m-major", ld_sfa=M - 1), ValueError,
         ["ld_sfa must be an integer >= 17 (M)"]),
        ("pow2-not-bool", dict(x=x(), pow2_scales=1), TypeError,
         ["pow2_scales must be True or False"]),
        # Accepted up to the device check:
        ("cpu", dict(x=x()), ValueError, ["x must be on a CUDA device, got cpu"]),
        ("cpu-m-major-padded", dict(x=x(), layout="m-major", ld_sfa=M + 3), ValueError,
         ["x must be on a CUDA device, got cpu"]),
        ("cpu-strided-rows", dict(x=torch.ones(M, K + 8, dtype=bf16)[:, :K]), ValueError,
         ["x must be on a CUDA device, got cpu"]),
    ]


def check(kwargs, exc, words):
    try:
        jitgemm.quantize_fp8_1x128(**kwargs)
    except exc as e:
        for w in words:
            assert w in str(e), "%r not in %r" % (w, str(e))
    else:
        raise AssertionError("quantize_fp8_1x128 accepted it; expected %s" % exc.__name__)


def check_all():
    import torch

    for name, kwargs, exc, words in cases(torch):
        try:
            check(kwargs, exc, words)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (name, e)) from None
