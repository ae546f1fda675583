// head_cuda.cu: the general head's training on the GPU (head.hpp), batched over seeds, by one
// of two kernels (docs/GPU.md, "The head's training kernels").
//
// The warp kernel (train_warp_kernel): a block of one warp per seed, the seed's whole workspace
// (layout(m): weights, activations, gradients, Adam's state) in the block's shared memory. Each
// step of head.hpp's training is one or two phases; in a phase the warp's 32 lanes share out
// the output elements (lane l takes elements l, l + 32, ... of the flattened output, over_lanes)
// and each lane computes its element's sum alone, as one chain of fused multiply-adds in
// head.hpp's order, so every element has the CPU twin's bits. A phase reads only what earlier
// phases wrote, and __syncwarp() ends each phase (its writes are then visible to every lane).
// Row-wise work (the softmax, the softmax backward's row sums) takes a row per lane, after the
// phase that computed the row's elements. What is one chain for the whole seed (drawing the
// start, the loss) runs on lane 0. Shared memory per seed is warp_shared_bytes(m), at most the
// device's opt-in limit per block (227 KiB on an H200); the inputs X, Y stay in global memory,
// shared by every seed (read through the cache).
//
// The thread kernel (train_kernel): one seed per thread, every operand in global memory, element
// e of seed i at [e * count + i], so that the threads of a warp (neighbouring seeds) read and
// write neighbouring addresses; it runs head.hpp's train_steps itself. It trains what the warp
// kernel does not: a workspace larger than a block's shared memory, the numeric gradient.
//
// Both: a launch trains every seed of the call through a slice of steps [s0, s1): the first
// slice draws each seed's start with numpy's generator (numpy_random.hpp, on the device) and
// runs the forward pass; the last writes the results. The state between slices is the
// workspace in global memory (the warp kernel copies it into shared memory at a slice's start
// and back at its end), so slicing a training across launches changes no arithmetic: the host
// wrapper slices so that the host can ask for a stop between launches. The only copies between
// host and device are the task (X, Y) and the seeds in, the results out, once per call; nothing
// is allocated per step or per slice.
//
// Why a model per warp or thread and not strided-batched GEMM (cuBLAS, seeds as the batch): at
// the sizes this table is for (n = 8, d = 16: a seed's products are 8×16×16, about 4 kFLOP
// each), a sequential step is ~20 dependent products and softmax/elementwise kernels, i.e.
// ~20,000 launches per 1,000 steps, each streaming the whole batch's activations through HBM,
// and cuBLAS runs such tiny matrices far below peak. For large shapes (d_k, n in the hundreds)
// the GEMM form would win; it is not built yet (docs/GPU.md).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "head.hpp"

namespace attn::head {
namespace {

// ---- The thread kernel ---------------------------------------------------------------------

// Element e of this thread's seed in the interleaved workspace.
struct Strided {
  double* base;
  std::int64_t stride;
  __device__ double& operator[](std::int64_t e) const { return base[e * stride]; }
};

struct Store {
  Strided w;
  __device__ void operator()(std::int64_t at, double v) const { w[at] = v; }
};

struct Get {
  Strided w;
  __device__ double operator()(std::int64_t at) const { return w[at]; }
};

__global__ void train_kernel(Model m, const std::uint64_t* __restrict__ seeds, std::int64_t count,
                             double* __restrict__ workspace, double* __restrict__ out, int s0,
                             int s1) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const Strided w{workspace + i, count};
  if (s0 == 0) {
    Store store{w};
    initial_weights(m, seeds[i], store);
    start<double>(m, w);
  }
  train_steps<double>(m, w, s0, s1);
  if (s1 == m.steps) {
    Get get{w};
    write_result(m, get, out + i * result_size(m));
  }
}

// ---- The warp kernel -----------------------------------------------------------------------

constexpr int kLanes = 32;

// The running block's seed workspace (warp_shared_bytes(m), the launch's dynamic shared memory).
extern __shared__ double seed_workspace[];

// The workspace as head.hpp's accessor: w[e] is element e.
struct Seed {
  __device__ decltype(auto) operator[](std::int64_t e) const {
    return seed_workspace[static_cast<std::size_t>(e)];
  }
};

__device__ ATTN_INLINE int lane() { return static_cast<int>(threadIdx.x); }

// The elements [0, count) of a phase's output over the warp's lanes: lane l computes l, l + 32,
// and so on. The caller ends the phase with __syncwarp().
template <class F>
__device__ ATTN_INLINE void over_lanes(std::int64_t count, F element) {
  for (std::int64_t e = lane(); e < count; e += kLanes) element(e);
}

// One element of the rows [r_begin, n) of every input, `cols` columns: its stacked row b n + i,
// its input b and column c.
struct RowCol {
  std::int64_t r;
  int b, i, c;
};
__device__ ATTN_INLINE RowCol row_col(const Model& m, std::int64_t e, int r_begin, int cols) {
  const int rows = m.n - r_begin;
  const std::int64_t ri = e / cols;
  RowCol at;
  at.c = static_cast<int>(e % cols);
  at.b = static_cast<int>(ri / rows);
  at.i = r_begin + static_cast<int>(ri % rows);
  at.r = static_cast<std::int64_t>(at.b) * m.n + at.i;
  return at;
}

// One row of a map (input b, head h, query i in R), from e in [0, B H |R|).
struct MapRow {
  int b, h, i;
};
__device__ ATTN_INLINE MapRow map_row(const Model& m, std::int64_t e) {
  const int rows = m.rows();
  MapRow at;
  at.i = m.r0 + static_cast<int>(e % rows);
  const std::int64_t bh = e / rows;
  at.h = static_cast<int>(bh % m.heads);
  at.b = static_cast<int>(bh / m.heads);
  return at;
}

// head.hpp's project: out = X W on the rows [r_begin, n) of every input.
__device__ void project_warp(const Model& m, Seed w, std::int64_t wo, std::int64_t oo, int cols,
                             int r_begin) {
  over_lanes(static_cast<std::int64_t>(m.inputs) * (m.n - r_begin) * cols, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, r_begin, cols);
    double acc = 0.0;
    for (int k = 0; k < m.d_model; ++k)
      acc = fma_t(m.x[at.r * m.d_model + k], double(w[wo + k * cols + at.c]), acc);
    w[oo + at.r * cols + at.c] = acc;
  });
  __syncwarp();
}

// head.hpp's scores_softmax: the scores of every visible key (a phase), then the softmax of each
// row (a row per lane). A frozen map (head.hpp's frozen_maps_of): the known map's weights in
// place of the scores (0 at the masked keys; element e of the phase is element e of m.known, whose
// layout is the phase's order), no softmax; the uniform map as the softmax of equal scores, 0 on
// every visible key: exp(0) = 1 exactly, their sum k exactly, so each weight is 1/k, one
// division, frozen_weight's bits. (A division of its own in the phase would make this kernel
// spill registers; the softmax's is there already.)
__device__ void scores_softmax_warp(const Model& m, const Layout& l, Seed w) {
  const double root = scale_root(m);
  const int dh = m.key_width(), n = m.n;
  const std::int64_t rows = static_cast<std::int64_t>(m.inputs) * m.heads * m.rows();
  over_lanes(rows * n, [&](std::int64_t e) {
    const MapRow at = map_row(m, e / n);
    const int j = static_cast<int>(e % n);
    if (m.frozen()) {
      w[map_at(m, l.p, at.b, at.h) + at.i * n + j] =
          m.map == MapMode::uniform || j > m.last_key(at.i) ? 0.0 : m.known[e];
      return;
    }
    if (j > m.last_key(at.i)) return;
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * n;
    double s = 0.0;
    for (int c = at.h * dh; c < (at.h + 1) * dh; ++c)
      s = fma_t(double(w[l.q + (row0 + at.i) * m.d_k + c]), double(w[l.k + (row0 + j) * m.d_k + c]),
                s);
    w[map_at(m, l.p, at.b, at.h) + at.i * n + j] = scaled(m, root, s);
  });
  __syncwarp();
  if (m.map == MapMode::known) return;
  over_lanes(rows, [&](std::int64_t e) {
    const MapRow at = map_row(m, e);
    const std::int64_t p = map_at(m, l.p, at.b, at.h) + static_cast<std::int64_t>(at.i) * n;
    const int last = m.last_key(at.i);
    double top = 0.0;
    for (int j = 0; j <= last; ++j) {
      const double s = w[p + j];
      top = j == 0 ? s : pick_gt(s, top, s, top);
    }
    double sum = 0.0;
    for (int j = 0; j <= last; ++j) {
      const double x = exp_t(double(w[p + j]) - top);
      w[p + j] = x;
      sum = sum + x;
    }
    for (int j = 0; j <= last; ++j) w[p + j] = double(w[p + j]) / sum;
    for (int j = last + 1; j < n; ++j) w[p + j] = 0.0;
  });
  __syncwarp();
}

// head.hpp's final_outputs: F = O W_O on the rows of R (qkvo).
__device__ void final_outputs_warp(const Model& m, const Layout& l, Seed w) {
  over_lanes(static_cast<std::int64_t>(m.inputs) * m.rows() * m.d_model, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, m.r0, m.d_model);
    double acc = 0.0;
    for (int t = 0; t < m.d_v; ++t)
      acc = fma_t(double(w[l.o + at.r * m.d_v + t]), double(w[l.wo + t * m.d_model + at.c]), acc);
    w[l.f + at.r * m.d_model + at.c] = acc;
  });
  __syncwarp();
}

// head.hpp's outputs: O = concat_h(P_h V_h) on the rows of R, then F (qkvo).
__device__ void outputs_warp(const Model& m, const Layout& l, Seed w) {
  const int dh = m.value_width();
  over_lanes(static_cast<std::int64_t>(m.inputs) * m.rows() * m.d_v, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, m.r0, m.d_v);
    const std::int64_t p = map_at(m, l.p, at.b, at.c / dh) + static_cast<std::int64_t>(at.i) * m.n;
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * m.n;
    double acc = 0.0;
    for (int j = 0; j < m.n; ++j)
      acc = fma_t(double(w[p + j]), double(w[l.v + (row0 + j) * m.d_v + at.c]), acc);
    w[l.o + at.r * m.d_v + at.c] = acc;
  });
  __syncwarp();
  if (m.train_output) final_outputs_warp(m, l, w);
}

__device__ void forward_warp(const Model& m, const Layout& l, Seed w) {
  project_warp(m, w, l.wq, l.q, m.d_k, m.r0);
  project_warp(m, w, l.wk, l.k, m.d_k, 0);
  project_warp(m, w, l.wv, l.v, m.d_v, 0);
  scores_softmax_warp(m, l, w);
  outputs_warp(m, l, w);
}

// head.hpp's backward_outputs: dF = (2/B) (F − Y), then (qkvo) dO = dF W_Oᵀ.
__device__ void backward_outputs_warp(const Model& m, const Layout& l, Seed w) {
  const int d = m.d_out();
  const double two = output_gradient_factor(m);
  const std::int64_t rows = static_cast<std::int64_t>(m.inputs) * m.rows();
  over_lanes(rows * d, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, m.r0, d);
    const std::int64_t x = at.r * d + at.c;
    w[l.d_f + x] = two * (double(w[l.f + x]) - m.y[x]);
  });
  __syncwarp();
  if (!m.train_output) return;
  over_lanes(rows * m.d_v, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, m.r0, m.d_v);
    double acc = 0.0;
    for (int c = 0; c < m.d_model; ++c)
      acc = fma_t(double(w[l.d_f + at.r * m.d_model + c]),
                  double(w[l.wo + static_cast<std::int64_t>(at.c) * m.d_model + c]), acc);
    w[l.d_o + at.r * m.d_v + at.c] = acc;
  });
  __syncwarp();
}

// head.hpp's backward_scores: dP = dO Vᵀ over the visible keys (a phase), then dS = P ⊙ (dP −
// rowsum(dP ⊙ P)) in place, a row per lane.
__device__ void backward_scores_warp(const Model& m, const Layout& l, Seed w) {
  const int dh = m.value_width(), n = m.n;
  const std::int64_t rows = static_cast<std::int64_t>(m.inputs) * m.heads * m.rows();
  over_lanes(rows * n, [&](std::int64_t e) {
    const MapRow at = map_row(m, e / n);
    const int j = static_cast<int>(e % n);
    if (j > m.last_key(at.i)) return;
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * n;
    double acc = 0.0;
    for (int c = at.h * dh; c < (at.h + 1) * dh; ++c)
      acc = fma_t(double(w[l.d_o + (row0 + at.i) * m.d_v + c]),
                  double(w[l.v + (row0 + j) * m.d_v + c]), acc);
    w[map_at(m, l.d_p, at.b, at.h) + at.i * n + j] = acc;
  });
  __syncwarp();
  over_lanes(rows, [&](std::int64_t e) {
    const MapRow at = map_row(m, e);
    const std::int64_t at_row = static_cast<std::int64_t>(at.i) * n;
    const std::int64_t p = map_at(m, l.p, at.b, at.h) + at_row;
    const std::int64_t d_p = map_at(m, l.d_p, at.b, at.h) + at_row;
    const int last = m.last_key(at.i);
    double dot = 0.0;
    for (int j = 0; j <= last; ++j) dot = fma_t(double(w[d_p + j]), double(w[p + j]), dot);
    for (int j = 0; j <= last; ++j) w[d_p + j] = double(w[p + j]) * (double(w[d_p + j]) - dot);
    for (int j = last + 1; j < n; ++j) w[d_p + j] = 0.0;
  });
  __syncwarp();
}

// head.hpp's grad_queries: dQ_h = dS_h K_h c on the rows of R.
__device__ void grad_queries_warp(const Model& m, const Layout& l, Seed w) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  over_lanes(static_cast<std::int64_t>(m.inputs) * m.rows() * m.d_k, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, m.r0, m.d_k);
    const std::int64_t d_p =
        map_at(m, l.d_p, at.b, at.c / dh) + static_cast<std::int64_t>(at.i) * m.n;
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * m.n;
    double acc = 0.0;
    for (int j = 0; j < m.n; ++j)
      acc = fma_t(double(w[d_p + j]), double(w[l.k + (row0 + j) * m.d_k + at.c]), acc);
    w[l.dq + at.r * m.d_k + at.c] = scaled(m, root, acc);
  });
  __syncwarp();
}

// head.hpp's grad_keys: dK_h = dS_hᵀ Q_h c on every row (sums over the rows of R).
__device__ void grad_keys_warp(const Model& m, const Layout& l, Seed w) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  over_lanes(static_cast<std::int64_t>(m.inputs) * m.n * m.d_k, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, 0, m.d_k);  // at.i is the key j
    const std::int64_t d_p = map_at(m, l.d_p, at.b, at.c / dh);
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * m.n;
    double acc = 0.0;
    for (int i = m.r0; i < m.n; ++i)
      acc = fma_t(double(w[d_p + static_cast<std::int64_t>(i) * m.n + at.i]),
                  double(w[l.q + (row0 + i) * m.d_k + at.c]), acc);
    w[l.dk + at.r * m.d_k + at.c] = scaled(m, root, acc);
  });
  __syncwarp();
}

// head.hpp's grad_values: dV_h = P_hᵀ dO_h on every row (sums over the rows of R).
__device__ void grad_values_warp(const Model& m, const Layout& l, Seed w) {
  const int dh = m.value_width();
  over_lanes(static_cast<std::int64_t>(m.inputs) * m.n * m.d_v, [&](std::int64_t e) {
    const RowCol at = row_col(m, e, 0, m.d_v);  // at.i is the key j
    const std::int64_t p = map_at(m, l.p, at.b, at.c / dh);
    const std::int64_t row0 = static_cast<std::int64_t>(at.b) * m.n;
    double acc = 0.0;
    for (int i = m.r0; i < m.n; ++i)
      acc = fma_t(double(w[p + static_cast<std::int64_t>(i) * m.n + at.i]),
                  double(w[l.d_o + (row0 + i) * m.d_v + at.c]), acc);
    w[l.dv + at.r * m.d_v + at.c] = acc;
  });
  __syncwarp();
}

// head.hpp's descend: G = Σ_b X_bᵀ dZ_b over the rows [r_begin, n), taken (take_gradient).
__device__ void descend_warp(const Model& m, Seed w, std::int64_t wo, std::int64_t dz, int cols,
                             int r_begin, std::int64_t go) {
  over_lanes(static_cast<std::int64_t>(m.d_model) * cols, [&](std::int64_t e) {
    const int k = static_cast<int>(e / cols), c = static_cast<int>(e % cols);
    double acc = 0.0;
    for (int b = 0; b < m.inputs; ++b)
      for (int i = r_begin; i < m.n; ++i) {
        const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
        acc = fma_t(m.x[r * m.d_model + k], double(w[dz + r * cols + c]), acc);
      }
    take_gradient<double>(m, w, wo, go, e, acc);
  });
  __syncwarp();
}

// head.hpp's descend_output: dW_O = Σ_b O_bᵀ dF_b over the rows of R, taken.
__device__ void descend_output_warp(const Model& m, const Layout& l, Seed w, std::int64_t go) {
  over_lanes(static_cast<std::int64_t>(m.d_v) * m.d_model, [&](std::int64_t e) {
    const int t = static_cast<int>(e / m.d_model), c = static_cast<int>(e % m.d_model);
    double acc = 0.0;
    for (int b = 0; b < m.inputs; ++b)
      for (int i = m.r0; i < m.n; ++i) {
        const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
        acc = fma_t(double(w[l.o + r * m.d_v + t]), double(w[l.d_f + r * m.d_model + c]), acc);
      }
    take_gradient<double>(m, w, l.wo, go, e, acc);
  });
  __syncwarp();
}

// head.hpp's adam for matrix `which`, its gradient at w[go]: an element per lane.
__device__ void adam_warp(const Model& m, const Layout& l, Seed w, int which, std::int64_t go) {
  const std::int64_t wo = matrix_at(l, which), gi = gradient_at(m, which);
  const std::int64_t mo = l.am + gi, vo = l.av + gi;
  const double c1 = 1.0 - double(w[l.powers]), c2 = 1.0 - double(w[l.powers + 1]);
  over_lanes(static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which),
             [&](std::int64_t e) {
               const double g = w[go + e];
               const double mm = kBeta1 * double(w[mo + e]) + (1.0 - kBeta1) * g;
               const double vv = kBeta2 * double(w[vo + e]) + (1.0 - kBeta2) * (g * g);
               w[mo + e] = mm;
               w[vo + e] = vv;
               w[wo + e] =
                   double(w[wo + e]) - (m.lr * (mm / c1)) / (sqrt_t(vv / c2) + kAdamEpsilon);
             });
  __syncwarp();
}

// head.hpp's descend_of: matrix `which`'s gradient, taken.
__device__ void descend_of_warp(const Model& m, const Layout& l, Seed w, int which) {
  const std::int64_t go = l.g + gradient_at(m, which);
  if (which == 0) {
    grad_queries_warp(m, l, w);
    descend_warp(m, w, l.wq, l.dq, m.d_k, m.r0, go);
  }
  if (which == 1) {
    grad_keys_warp(m, l, w);
    descend_warp(m, w, l.wk, l.dk, m.d_k, 0, go);
  }
  if (which == 2) {
    grad_values_warp(m, l, w);
    descend_warp(m, w, l.wv, l.dv, m.d_v, 0, go);
  }
  if (which == 3) descend_output_warp(m, l, w, go);
}

// head.hpp's refresh: what follows an update of matrix `which`, recomputed.
__device__ void refresh_warp(const Model& m, const Layout& l, Seed w, int which) {
  if (which == 0) project_warp(m, w, l.wq, l.q, m.d_k, m.r0);
  if (which == 1) project_warp(m, w, l.wk, l.k, m.d_k, 0);
  if (which == 2) project_warp(m, w, l.wv, l.v, m.d_v, 0);
  if (which < 2) scores_softmax_warp(m, l, w);
  if (which < 3)
    outputs_warp(m, l, w);
  else
    final_outputs_warp(m, l, w);
}

// head.hpp's train_steps for an analytic gradient, phase by phase.
__device__ void train_steps_warp(const Model& m, const Layout& l, Seed w, int s0, int s1) {
  const int first = m.first_trained(), trained = m.trained();
  const bool maps = !m.frozen();  // the maps are trained: W_Q's and W_K's gradients
  const bool adam = m.optimizer == Optimizer::adam;
  for (int step = s0; step < s1; ++step) {
    if (adam) {
      if (lane() == 0) advance_powers<double>(m, l, w);
      __syncwarp();
    }
    if (m.schedule == Schedule::sequential) {
      for (int which = first; which < trained; ++which) {
        backward_outputs_warp(m, l, w);
        if (which < 2) backward_scores_warp(m, l, w);
        descend_of_warp(m, l, w, which);
        if (adam) adam_warp(m, l, w, which, l.g + gradient_at(m, which));
        refresh_warp(m, l, w, which);
      }
    } else {
      backward_outputs_warp(m, l, w);
      if (maps) {
        backward_scores_warp(m, l, w);
        grad_queries_warp(m, l, w);
        grad_keys_warp(m, l, w);
      }
      if (trained > 2) grad_values_warp(m, l, w);
      if (trained > 3) descend_output_warp(m, l, w, l.g + gradient_at(m, 3));
      if (maps) {
        descend_warp(m, w, l.wq, l.dq, m.d_k, m.r0, l.g + gradient_at(m, 0));
        descend_warp(m, w, l.wk, l.dk, m.d_k, 0, l.g + gradient_at(m, 1));
      }
      if (trained > 2) descend_warp(m, w, l.wv, l.dv, m.d_v, 0, l.g + gradient_at(m, 2));
      if (adam)
        for (int which = first; which < trained; ++which)
          adam_warp(m, l, w, which, l.g + gradient_at(m, which));
      if (maps)
        forward_warp(m, l, w);
      else
        refresh_warp(m, l, w, 2);  // a frozen map: only W_V and W_O changed
    }
  }
}

// Block i trains seed seeds[i] (blocks of one warp); workspace: seed i's state between slices
// at [i * total, (i + 1) * total).
__global__ void __launch_bounds__(kLanes)
    train_warp_kernel(Model m, const std::uint64_t* __restrict__ seeds, std::int64_t count,
                      double* __restrict__ workspace, double* __restrict__ out, int s0, int s1) {
  const std::int64_t i = blockIdx.x;
  if (i >= count) return;
  const Layout l = layout(m);
  const Seed w{};
  if (s0 == 0) {
    if (lane() == 0) {
      auto store = [w](std::int64_t at, double v) { w[at] = v; };
      initial_weights(m, seeds[i], store);
    }
    __syncwarp();
    forward_warp(m, l, w);
    if (lane() == 0) start_state<double>(m, l, w);
  } else {
    const double* kept = workspace + i * l.total;
    over_lanes(l.total, [&](std::int64_t e) { w[e] = kept[e]; });
  }
  __syncwarp();
  train_steps_warp(m, l, w, s0, s1);
  if (s1 < m.steps) {
    double* keep = workspace + i * l.total;
    over_lanes(l.total, [&](std::int64_t e) { keep[e] = w[e]; });
    return;
  }
  double* result = out + i * result_size(m);
  if (lane() == 0) {
    result[0] = loss_of<double>(m, l, w);
    result[1] = w[l.start];
  }
  over_lanes(weights_size(m), [&](std::int64_t e) { result[2 + e] = w[e]; });
}

// The most shared memory a block of the current device may have (its opt-in limit), once.
std::int64_t shared_limit() {
  static const std::int64_t limit = [] {
    int device = 0, bytes = 0;
    ATTN_CUDA_CHECK(cudaGetDevice(&device));
    ATTN_CUDA_CHECK(
        cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return static_cast<std::int64_t>(bytes);
  }();
  return limit;
}

}  // namespace

GpuKernel chosen_kernel(const Model& m, GpuKernel kernel) {
  if (kernel == GpuKernel::thread) return kernel;
  const bool fits = warp_fits(m, shared_limit());
  if (kernel == GpuKernel::warp && !fits)
    throw std::invalid_argument("train_seeds_cuda_device: the warp kernel needs " +
                                std::to_string(warp_shared_bytes(m)) +
                                " bytes of shared memory a seed and an analytic gradient; the "
                                "device's blocks have " +
                                std::to_string(shared_limit()) + " bytes");
  return fits ? GpuKernel::warp : GpuKernel::thread;
}

void train_seeds_cuda_device(const Model& m, const std::uint64_t* d_seeds, std::int64_t count,
                             double* d_workspace, double* d_out, int s0, int s1, GpuKernel kernel) {
  if (!(0 <= s0 && s0 <= s1 && s1 <= m.steps))
    throw std::invalid_argument("train_seeds_cuda_device: steps [" + std::to_string(s0) + ", " +
                                std::to_string(s1) + ") outside [0, " + std::to_string(m.steps) +
                                "]");
  if (count <= 0) return;
  if (chosen_kernel(m, kernel) == GpuKernel::warp) {
    const std::size_t bytes = static_cast<std::size_t>(warp_shared_bytes(m));
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(
        train_warp_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    train_warp_kernel<<<grid_blocks(count, 1), kLanes, bytes>>>(m, d_seeds, count, d_workspace,
                                                                d_out, s0, s1);
    ATTN_CUDA_CHECK_LAUNCH();
    return;
  }
  constexpr int kThreads = 128;
  train_kernel<<<grid_blocks(count, kThreads), kThreads>>>(m, d_seeds, count, d_workspace, d_out,
                                                           s0, s1);
  ATTN_CUDA_CHECK_LAUNCH();
}

void train_seeds_cuda(const Model& host_model, const std::uint64_t* seeds, std::int64_t count,
                      double* out, int steps_per_slice, const Monitor& monitor, GpuKernel kernel) {
  if (count <= 0) return;
  const std::size_t n = static_cast<std::size_t>(count);
  // The inputs, stacked (head.hpp's Model): once per call, shared by every seed.
  const std::size_t rows = static_cast<std::size_t>(host_model.inputs) * host_model.n;
  const auto d_x = DeviceBuffer<double>::from_host(host_model.x, rows * host_model.d_model);
  const auto d_y = DeviceBuffer<double>::from_host(host_model.y, rows * host_model.d_out());
  // The known maps (map known), read where the maps are formed.
  const std::size_t known = host_model.map == MapMode::known
                                ? static_cast<std::size_t>(host_model.inputs) * host_model.heads *
                                      host_model.rows() * host_model.n
                                : 0;
  const auto d_known = DeviceBuffer<double>::from_host(host_model.known, known);
  const auto d_seeds = DeviceBuffer<std::uint64_t>::from_host(seeds, n);
  const int slice = steps_per_slice > 0 ? steps_per_slice : host_model.steps;
  // The state between slices (the thread kernel's whole training): none for a warp kernel's
  // training in one launch.
  const GpuKernel chosen = chosen_kernel(host_model, kernel);
  const bool keeps = chosen == GpuKernel::thread || slice < host_model.steps;
  DeviceBuffer<double> d_ws(keeps ? n * static_cast<std::size_t>(layout(host_model).total) : 0);
  DeviceBuffer<double> d_out(n * static_cast<std::size_t>(result_size(host_model)));
  Model m = host_model;
  m.x = d_x.data();
  m.y = d_y.data();
  m.known = known > 0 ? d_known.data() : nullptr;
  // One launch even for zero steps: it draws the start and writes the results.
  for (int s0 = 0;;) {
    const int s1 = m.steps - s0 > slice ? s0 + slice : m.steps;
    train_seeds_cuda_device(m, d_seeds.data(), count, d_ws.data(), d_out.data(), s0, s1, chosen);
    if (s1 == m.steps) break;
    // Wait for the slice, so that the stop test comes between slices and not all at once.
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    monitor.stop_point();
    s0 = s1;
  }
  d_out.download(out);
}

}  // namespace attn::head
