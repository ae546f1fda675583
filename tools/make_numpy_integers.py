#!/usr/bin/python3
"""Golden draws of numpy's Generator.integers(0, high, size=n) (default dtype int64), with
normal draws between them, for tests/test_numpy_random.cpp (kernels/numpy_random/numpy_random.hpp's
integer_below). Writes tests/data/numpy_integers.json.

Each case: a seed and a list of calls on one default_rng(seed), in order:
  ["integers", high, n]  -> the n values
  ["normal", n]          -> the n standard normals, as float.hex()
The cases cover high = 1 (no draw), small and large ranges (rejections are frequent near
2^31 + 1), high = 2^32 (one 32-bit word a value), odd n (a 64-bit word's high half carried to
the next call) and normals between integer calls (64-bit draws, which leave a kept half alone).

Usage: /usr/bin/python3 tools/make_numpy_integers.py > tests/data/numpy_integers.json
"""
import json
import random
import sys

import numpy as np


def main():
    rnd = random.Random(20261203)
    highs = [1, 2, 3, 5, 7, 10, 26, 100, 1000, 65537, 2**31 + 1, 3 * 2**30, 2**32 - 5, 2**32]
    cases = []
    for k in range(60):
        seed = rnd.choice([k, rnd.randrange(2**64)])
        calls = []
        for _ in range(rnd.randint(1, 7)):
            if rnd.random() < 0.7:
                calls.append(["integers", rnd.choice(highs), rnd.randint(1, 9)])
            else:
                calls.append(["normal", rnd.randint(1, 3)])
        g = np.random.default_rng(seed)
        results = []
        for c in calls:
            if c[0] == "integers":
                v = g.integers(0, c[1], size=c[2])
                assert v.dtype == np.int64
                results.append([int(x) for x in v])
            else:
                results.append([float(x).hex() for x in g.normal(size=c[1])])
        cases.append({"seed": str(seed), "calls": calls, "results": results})
    json.dump({"source": f"numpy {np.__version__}, numpy.random.default_rng(seed)",
               "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
