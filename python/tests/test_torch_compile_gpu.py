"""jitgemm.gemm as a PyTorch operator on the GPU: opcheck, and torch.compile with inductor with
and without CUDA graphs (compile_cases.py holds the checks); skipped without PyTorch 2.4 or
later or without a GPU."""

import pytest

import compile_cases

_why_not = compile_cases.available()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=str(_why_not))
CASES = compile_cases.all_cases()


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_gpu(name, fn, args):
    fn(*args)
