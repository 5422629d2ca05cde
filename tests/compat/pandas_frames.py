"""pandas: frames built, grouped, merged, pivoted and written to CSV text."""
import numpy as np
import pandas as pd

from compat_rounds import rounds


def work(i):
    rng = np.random.default_rng(i)
    df = pd.DataFrame({"key": rng.integers(0, 50, 20000), "value": rng.standard_normal(20000),
                       "label": [f"item{k % 97}" for k in range(20000)]})
    groups = df.groupby("key")["value"].agg(["sum", "count"]).round(6)
    other = pd.DataFrame({"key": range(50), "weight": np.linspace(0, 1, 50)})
    merged = df.merge(other, on="key")
    pivot = merged.pivot_table(index="key", values="weight", aggfunc="mean").round(6)
    text = groups.head(5).to_csv()
    return (len(merged), float(pivot["weight"].sum()), text.count("\n"), text[:60])


for r in rounds(3, work):
    print(r)
