"""jitgemm.gemm on the GPU (gpu_cases.py holds the checks); skipped without PyTorch or a GPU."""

import pytest

import gpu_cases

_why_not = gpu_cases.available()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=str(_why_not))


@pytest.mark.parametrize("name,fn,args", gpu_cases.all_cases(), ids=[c[0] for c in gpu_cases.all_cases()])
def test_gpu(name, fn, args):
    fn(*args)
