// small_attention.hpp: the lesson's hand-sized attention problems (three words, two numbers per
// word), batched and sent through the backend's attention kernels.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "host/backend.hpp"
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

// Adds rows (case, quantity, row name, values) for an r x c row-major matrix.
void add_matrix_rows(Table& t, const std::string& case_name, const std::string& quantity,
                     const double* m, int rows, int cols,
                     const std::vector<std::string>& row_names);

// The columns of the matrix tables: case, quantity, row, values.
std::vector<Column> matrix_columns();

// The figure of the weighted-average and qkv tables: a heatmap panel of every 3 x 3 weight
// matrix in the table (rows "weights..." of matrix_columns()), row looks at column.
std::string weight_heatmaps_script(const Table& t);

// "0.77" style, for notes: value rounded to `decimals` places.
std::string fixed(double v, int decimals);

}  // namespace attn
