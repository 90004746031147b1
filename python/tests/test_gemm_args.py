"""jitgemm.gemm's argument checks, which run before anything reaches the GPU: CPU tensors are
enough to reach them. Skipped without PyTorch."""

import pytest

import jitgemm

torch = pytest.importorskip("torch")
if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this PyTorch has no float8_e4m3fn", allow_module_level=True)

M, N, K = 17, 64, 128
F8 = torch.float8_e4m3fn


def args(**changes):
    a = dict(
        a=torch.ones(M, K).to(F8),
        b=torch.ones(N, K).to(F8),
        scale_a=torch.ones(M),
        scale_b=torch.ones(N),
    )
    a.update(changes)
    return a


@pytest.mark.parametrize("changes,exc,words", [
    (dict(a=[[1.0]]), TypeError, ["a must be a torch.Tensor, got list"]),
    (dict(a=torch.ones(M, K, dtype=torch.float16)), TypeError,
     ["a must be torch.float8_e4m3fn, got torch.float16"]),
    (dict(b=torch.ones(N, K).to(torch.float8_e5m2)), TypeError, ["b must be torch.float8_e4m3fn"]),
    (dict(scale_a=torch.ones(M, dtype=torch.float64)), TypeError,
     ["scale_a must be torch.float32, got torch.float64"]),
    (dict(a=torch.ones(M, K, 1).to(F8)), ValueError, ["a and b must be 2-D"]),
    (dict(b=torch.ones(N, K + 16).to(F8)), ValueError, ["their K differ"]),
    (dict(scale_a=torch.ones(M + 1)), ValueError, ["scale_a must hold one float32 per row of a"]),
    (dict(scale_b=torch.ones(N, 2)), ValueError, ["scale_b must hold one float32 per row of b"]),
    (dict(epilogue="gelu"), ValueError, ["epilogue must be one of linear, linear_add, linear_swiglu"]),
    (dict(epilogue="linear_add"), ValueError, ["linear_add needs residual"]),
    (dict(residual=torch.ones(M, N, dtype=torch.bfloat16)), ValueError,
     ["residual is only read by linear_add"]),
    (dict(epilogue="linear_swiglu", b=torch.ones(N + 1, K).to(F8), scale_b=torch.ones(N + 1)),
     ValueError, ["linear_swiglu needs an even N"]),
    (dict(out=torch.empty(M, N, dtype=torch.float16)), TypeError,
     ["out must be torch.bfloat16, got torch.float16"]),
    (dict(a=torch.ones(K, M).to(F8).t()), ValueError, ["a must have contiguous rows"]),
    (dict(), ValueError, ["a must be on a CUDA device, got cpu"]),
])
def test_rejected_before_the_library(changes, exc, words):
    with pytest.raises(exc) as info:
        jitgemm.gemm(**args(**changes))
    for w in words:
        assert w in str(info.value)


def test_out_shape_is_checked():
    # Reaching the out check needs a CUDA device: every tensor must be on one device first.
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    cuda = {k: v.cuda() for k, v in args().items()}
    with pytest.raises(ValueError, match=r"out must have shape \[M, Nout\] = \(17, 32\)"):
        jitgemm.gemm(**cuda, epilogue="linear_swiglu", out=torch.empty(M, N, dtype=torch.bfloat16,
                                                                       device="cuda"))
    with pytest.raises(ValueError, match="residual is on cpu"):
        jitgemm.gemm(**cuda, epilogue="linear_add", residual=torch.ones(M, N, dtype=torch.bfloat16))
