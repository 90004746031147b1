"""jitgemm.quantize_fp8_1x128's argument checks (quantize_arg_cases.py) on CPU tensors: no GPU
needed. Skipped without PyTorch."""

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this PyTorch has no float8_e4m3fn", allow_module_level=True)

import quantize_arg_cases  # noqa: E402

CASES = quantize_arg_cases.cases(torch)


@pytest.mark.parametrize("kwargs,exc,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rejected_before_the_library(kwargs, exc, words):
    quantize_arg_cases.check(kwargs, exc, words)
