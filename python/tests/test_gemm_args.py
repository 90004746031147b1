"""jitgemm.gemm's argument checks (gemm_arg_cases.py) on CPU tensors: no GPU needed. Skipped
without PyTorch."""

import pytest

import jitgemm

torch = pytest.importorskip("torch")
if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this PyTorch has no float8_e4m3fn", allow_module_level=True)

import gemm_arg_cases  # noqa: E402

CASES = gemm_arg_cases.cases(torch)


@pytest.mark.parametrize("kwargs,exc,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rejected_before_the_library(kwargs, exc, words):
    gemm_arg_cases.check(kwargs, exc, words)


def test_device_mismatch_is_named():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    cuda = {k: v.cuda() for k, v in gemm_arg_cases._args(torch).items()}
    residual = torch.ones(gemm_arg_cases.M, gemm_arg_cases.N, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="residual is on cpu, a on cuda"):
        jitgemm.gemm(**cuda, epilogue="linear_add", residual=residual)
    with pytest.raises(ValueError, match="scale_b is on cpu"):
        jitgemm.gemm(**dict(cuda, scale_b=torch.ones(gemm_arg_cases.N)))
