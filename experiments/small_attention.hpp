// small_attention.hpp: the lesson's hand-sized attention problems (three words, two numbers per
// word), batched and sent through the backend's attention kernels.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/format.hpp"
#include "host/table.hpp"

namespace attn {

using Mat32 = std::array<double, 6>;  // 3 words x 2 numbers, row-major
using Mat22 = std::array<double, 4>;  // 2 x 2, row-major

inline constexpr Mat22 kIdentity2 = {1, 0, 0, 1};
inline constexpr Mat32 kCatDogCar = {2, 0, 1, 1, 0, 2};  // cat, dog, car (section 2)
inline const std::vector<std::string> kWords = {"cat", "dog", "car"};

struct SmallCase {
  std::string name;
  Mat32 x;
  Mat22 w_q, w_k, w_v;
};

struct SmallResult {
  std::array<double, 6> q, k, v, out;     // (3, 2)
  std::array<double, 9> scores, weights;  // (3, 3)
};

// One batched forward for all cases (d_model = d_k = d_v = 2); scale 0 means 1/sqrt(2).
std::vector<SmallResult> run_small(const Backend& b, const std::vector<SmallCase>& cases,
                                   double scale = 0);

// "[[0, 1], [1, 0]]": a 2 x 2 matrix as numpy prints its nested list.
std::string matrix_text(const Mat22& m);
// "cat [2, 0], dog [1, 1], car [0, 2]": the words of x by name.
std::string words_text(const Mat32& x);

// The figure of the weighted-average and qkv tables: a heatmap panel of every 3 x 3 weight
// matrix in the table (rows "weights..." of matrix_columns()), row looks at column, drawn from
// the table alone. The title adds t.run["setup"] (what every case shares), each panel
// t.run["cases"][its case] (what sets it apart: its X or weight matrices), where given.
std::string weight_heatmaps_script(const Table& t);

}  // namespace attn
