// array_io.hpp: the user's matrices for `demo attention`, read from .npy, .csv or .json, and
// arrays written back as .npy.
//
//   .npy   numpy's format 1.0, 2.0 or 3.0 (3.0: 2.0 with a UTF-8 header), float32 or float64,
//          little-endian, C or Fortran order. The header's dictionary is read here as the
//          Python literal numpy's format defines (keys in any order, either quote, a shape of
//          whole numbers, (n,) for one axis), every fault named (a shape entry that is not a
//          whole number: "(5, five)"); xtensor's reader, which took "(5, five)" for (5, 0) and
//          refuses 3.0, is not used. Then: a data size that matches the shape exactly, the
//          dtype, the values converted (Fortran order reordered, said on stderr); int, bool,
//          complex, float16, structured and big-endian data are refused.
//   .csv   one matrix, one row per line, values separated by commas; nan, inf, -inf allowed;
//          blank lines and lines starting with # ignored. One pass parses every cell (line and
//          column named on error) into the values.
//   .json  nested arrays of numbers (nlohmann-json), 1 to 3 levels, rectangular; the strings
//          "nan", "inf", "-inf" stand for the non-finite values (JSON has no literal for them).
// Reading, parsing and converting ask for a stop (host/progress.hpp's StopMeter, audited by
// ATTNLAB_STOP_AUDIT): every 64 MiB read, 4 MiB of CSV, 2^20 JSON elements, 2^22 values.
// A mask and key-padding lengths come from .npy alone: load_npy_bools (dtype bool, '|b1') and
// load_npy_integers (int8 to int64, uint8 to uint64, little-endian), 0 to 4 axes, none empty,
// C or Fortran order.
// Errors: std::runtime_error with one line "LABEL PATH: what is wrong" (LABEL is the option,
// e.g. --x), before any attention work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

struct Array {
  std::vector<std::size_t> shape;  // outermost first
  std::vector<double> data;        // C order (float32 input is exact in double)
  bool float32 = false;            // the file held float32 (npy only; text formats are f64)

  std::size_t size() const;
  std::string shape_text() const;  // "(3, 2)"
};

// Reads PATH; LABEL prefixes every error. The result has 2 or 3 axes, none of them zero: a
// scalar, a vector, an array of more than 3 axes or an empty one is refused. max_bytes: refuse
// files whose data would need more memory.
Array load_array(const std::string& label, const std::string& path, std::size_t max_bytes);

// Booleans (0 or 1 a byte) and whole numbers, C order, with their shape.
struct Bools {
  std::vector<std::size_t> shape;
  std::vector<unsigned char> data;
};
struct Integers {
  std::vector<std::size_t> shape;
  std::vector<std::int64_t> data;  // uint64 beyond int64's range reads as INT64_MAX
  std::vector<std::uint64_t> u64;  // a uint64 file's values as they are (for messages)
  // Entry i's value as the file holds it, in decimal.
  std::string text(std::size_t i) const {
    return u64.empty() ? std::to_string(data[i]) : std::to_string(u64[i]);
  }
};

// Reads a .npy of booleans (a mask) or of integers (lengths); LABEL prefixes every error, and
// anything else (another extension or dtype, more than 4 axes, an empty axis) is refused.
Bools load_npy_bools(const std::string& label, const std::string& path, std::size_t max_bytes);
Integers load_npy_integers(const std::string& label, const std::string& path,
                           std::size_t max_bytes);

// The array of a .npy file's bytes (read by the caller, e.g. with read_regular_file), for
// reading back what demo writes: the header checked as load_array checks it, dtype float32,
// float64, bool or a little-endian integer (int8 to int64, uint8 to uint64), at most 32 axes,
// empty ones allowed, the data exactly the shape's size. descr: numpy's dtype code ("<f8",
// "|b1"); data: the elements in C order (Fortran order converted), bytes reused, not copied.
// Throws std::runtime_error "LABEL PATH: what is wrong".
struct NpyArray {
  std::string descr;
  std::vector<std::size_t> shape;
  std::string data;
};
NpyArray npy_array(const std::string& label, const std::string& path, std::string bytes);

// A .npy file (version 1.0, C order, little-endian) holding data with this shape, as bytes,
// made by xtensor's xt::dump_npy. T is float or double.
template <class T>
std::string npy_bytes(const T* data, const std::vector<std::size_t>& shape);

// "(3, 2)" for any shape.
// The header of a .npy file (version 1.0, C order) of this dtype ("<f8", "<u8") and shape, made
// by xtensor's writer: the array's bytes, little-endian, follow it. For arrays written as they
// are computed, too large to hold.
std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape);

std::string shape_text(const std::vector<std::size_t>& shape);

}  // namespace attn
