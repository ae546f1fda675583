// attention_sweep.hpp: pieces of `demo --table attention-sweep` (attention_sweep.cpp) that are
// used, and tested, on their own.
#pragma once

namespace attn {

// The output distance of a pair of runs: sqrt(sum_e (a[e] - b[e])^2 / rows) over e < count.
// The plain sum of squares when it is in range (bit for bit). A run's loss is finite while its
// outputs stay below about 1.3e154, so two runs far out on opposite sides can have finite
// differences whose squares sum beyond the largest double; then the sum is taken over the
// differences divided by a power of two above the largest of them, and the root multiplied back.
// Non-finite inputs give the plain sum's inf or NaN.
double rms_distance(const double* a, const double* b, int count, int rows);

}  // namespace attn
