"""numba and llvmlite: LLVM starts, compiles a loop and a ufunc, and runs them."""
import numba
import numpy as np

from compat_rounds import rounds


@numba.njit(cache=False)
def sum_squares(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@numba.vectorize(["float64(float64, float64)"])
def hypot2(x, y):
    return x * x + y * y


def work(i):
    a = np.arange(10000 + i, dtype=np.float64)
    return (sum_squares(a), float(hypot2(a, a[::-1]).sum()))


for r in rounds(3, work):
    print(r)
