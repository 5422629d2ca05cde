"""SciPy: dense and sparse linear algebra, an FFT, an optimisation."""
import numpy as np
from scipy import fft, linalg, optimize, sparse
from scipy.sparse.linalg import spsolve

from compat_rounds import rounds


def work(i):
    rng = np.random.default_rng(42 + i)
    a = rng.standard_normal((200, 200)) + 200 * np.eye(200)
    b = rng.standard_normal(200)
    x = linalg.solve(a, b)
    s = sparse.random(400, 400, density=0.01, random_state=i, format="csr") + sparse.eye(400) * 10
    y = spsolve(s.tocsc(), np.ones(400))
    f = np.abs(fft.rfft(np.sin(np.arange(4096) * 0.01 * (i + 1)))).argmax()
    m = optimize.minimize(lambda v: ((v - 3.0) ** 2).sum(), np.zeros(4)).x
    return (round(float(x.sum()), 6), round(float(y.sum()), 6), int(f), [round(v, 4) for v in m])


for r in rounds(3, work):
    print(r)
