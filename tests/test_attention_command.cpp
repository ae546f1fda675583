// test_attention_command.cpp: `demo attention` end to end, and the non-finite rules through
// the command. Expected values: the lesson's checkpoint, exact maths, and a float64 numpy
// reference for 1,000 random problems (tools/make_attention_data.py, tests/data/attention).
// Files are written and read back with xtensor directly, not through the code under test.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <sstream>
#include <thread>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "helpers.hpp"

namespace attn {
namespace {

using test::run_demo;
using test::TempDir;

const std::string kData = std::string(ATTN_TEST_DATA) + "/attention/";

template <class T>
std::string save(const TempDir& d, const std::string& name, const std::vector<T>& data,
                 const std::vector<std::size_t>& shape) {
  xt::xarray<T> a = xt::adapt(data, shape);
  xt::dump_npy(d.file(name), a);
  return d.file(name);
}

// A .npy file with any header dict and raw data bytes (dtypes xtensor will not write).
std::string raw_npy(const TempDir& d, const std::string& name, const std::string& dict,
                    const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  return d.write(name, bytes + header + data);
}

xt::xarray<double> load(const std::string& path) { return xt::load_npy<double>(path); }

// The lesson's checkpoint: x = [[2,0],[1,1],[0,2]], W_K = [[0,1],[1,0]], W_Q = W_V = I.
// Exact maths: K = [[0,2],[1,1],[2,0]], scores of word 0 = [0, 2, 4] / sqrt(2), and so on.
std::vector<double> checkpoint_output() {
  const double r = std::sqrt(2.0);
  const double s[3][3] = {{0, 2 / r, 4 / r}, {2 / r, 2 / r, 2 / r}, {4 / r, 2 / r, 0}};
  const double v[3][2] = {{2, 0}, {1, 1}, {0, 2}};
  std::vector<double> out;
  for (const auto& row : s) {
    double z = 0, o0 = 0, o1 = 0;
    for (int j = 0; j < 3; ++j) z += std::exp(row[j]);
    for (int j = 0; j < 3; ++j) {
      o0 += std::exp(row[j]) / z * v[j][0];
      o1 += std::exp(row[j]) / z * v[j][1];
    }
    out.insert(out.end(), {o0, o1});
  }
  return out;
}

TEST(AttentionCommand, LessonCheckpointFromNpyCsvAndJson) {
  TempDir d;
  const std::vector<double> want = checkpoint_output();
  EXPECT_NEAR(want[0], 0.277, 5e-4);  // the lesson's printed numbers
  EXPECT_NEAR(want[1], 1.723, 5e-4);
  struct Files {
    std::string x, wq, wk, wv;
  };
  const Files npy{save<double>(d, "x.npy", {2, 0, 1, 1, 0, 2}, {3, 2}),
                  save<double>(d, "i.npy", {1, 0, 0, 1}, {2, 2}),
                  save<double>(d, "wk.npy", {0, 1, 1, 0}, {2, 2}), d.file("i.npy")};
  const Files csv{d.write("x.csv", "2,0\n1,1\n0,2\n"), d.write("i.csv", "1,0\n0,1\n"),
                  d.write("wk.csv", "0, 1\n1, 0\n"), d.file("i.csv")};
  const Files json{d.write("x.json", "[[2,0],[1,1],[0,2]]"), d.write("i.json", "[[1,0],[0,1]]"),
                   d.write("wk.json", "[[0,1],[1,0]]"), d.file("i.json")};
  // A spreadsheet's export: a UTF-8 byte order mark before the first cell (and CRLF lines).
  const std::string bom = "\xEF\xBB\xBF";
  const Files marked{d.write("xb.csv", bom + "2,0\n1,1\n0,2\n"),
                     d.write("ib.json", bom + "[[1,0],[0,1]]"),
                     d.write("wkb.csv", bom + "0,1\r\n1,0\r\n"), d.file("ib.json")};
  // What this reader does not take is named: UTF-16, CR-only line ends, a second mark.
  const std::string rest =
      " --w-q " + npy.wq + " --w-k " + npy.wk + " --w-v " + npy.wv + " --device cpu";
  test::expect_refused("attention --x " +
                           d.write("x16.csv", std::string("\xFF\xFE"
                                                          "2\0,\0"
                                                          "0\0",
                                                          8)) +
                           rest,
                       2, {"UTF-16 text"});
  test::expect_refused("attention --x " + d.write("xcr.csv", "2,0\r1,1\r0,2\r") + rest, 2,
                       {"its lines end in CR alone"});
  test::expect_refused("attention --x " + d.write("x2b.csv", bom + bom + "2,0\n1,1\n0,2\n") + rest,
                       2, {"a byte order mark (U+FEFF) inside the text"});
  for (const Files& f : {npy, csv, json, marked}) {
    const std::string args = "attention --x " + f.x + " --w-q " + f.wq + " --w-k " + f.wk +
                             " --w-v " + f.wv + " --device cpu";
    const auto text = run_demo(args);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("output    0    [0.277, 1.723]"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("output    1    [1, 1]"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("output    2    [1.723, 0.277]"), std::string::npos) << text.out;
    const auto js = run_demo(args + " --format json");
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const auto doc = nlohmann::json::parse(js.out);
    std::vector<double> got;
    for (const auto& row : doc["tables"][0]["rows"])
      if (row["quantity"] == "output")
        for (const auto& v : row["values"]) got.push_back(v.get<double>());
    ASSERT_EQ(got.size(), 6u);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << f.x;
  }
}

// 1,000 problems (per-problem W_Q and W_K, shared W_V) against numpy's float64 answers.
// Stated tolerances: float64 1e-12 (1 + |ref|); float32 (the inputs' own type) 1e-5 (1 + |ref|).
TEST(AttentionCommand, ThousandProblemsAgreeWithNumpyFloat64) {
  const auto out_ref = load(kData + "out_ref.npy"), w_ref = load(kData + "weights_ref.npy"),
             outc_ref = load(kData + "out_causal_ref.npy");
  const std::string in = " --x " + kData + "x.npy --w-q " + kData + "w_q.npy --w-k " + kData +
                         "w_k.npy --w-v " + kData + "w_v.npy --device cpu";
  struct Case {
    std::string extra;
    const xt::xarray<double>* ref;
    double tol;
  };
  for (const Case& c : {Case{" --dtype f64", &out_ref, 1e-12}, Case{"", &out_ref, 1e-5},
                        Case{" --dtype f64 --causal", &outc_ref, 1e-12}}) {
    TempDir d;
    const auto r = run_demo("attention" + in + c.extra + " --out " + d.file("o") + " --no-plots");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("max_weight"), std::string::npos) << r.out;  // the batch summary
    // float32 results are written as float32 .npy: read them as such.
    xt::xarray<double> out;
    if (c.extra.find("f64") == std::string::npos) {
      xt::xarray<float> f = xt::load_npy<float>(d.file("o/out.npy"));
      out = f;
    } else {
      out = load(d.file("o/out.npy"));
    }
    ASSERT_EQ(out.shape(), c.ref->shape());
    double worst = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      worst = std::max(worst,
                       std::fabs(out.flat(i) - c.ref->flat(i)) / (1 + std::fabs(c.ref->flat(i))));
    EXPECT_LT(worst, c.tol) << c.extra;
    if (c.extra == " --dtype f64") {
      const auto w = load(d.file("o/weights.npy"));
      ASSERT_EQ(w.shape(), w_ref.shape());
      double we = 0;
      for (std::size_t i = 0; i < w.size(); ++i)
        we = std::max(we, std::fabs(w.flat(i) - w_ref.flat(i)));
      EXPECT_LT(we, 1e-12);
    }
  }
}

// The batch summary (mean and std with ddof 1 of each row's largest weight, entropy and ||J||_F)
// against numpy over numpy's own float64 weights of the same 1,000 problems.
TEST(AttentionCommand, SummaryStatisticsAgreeWithNumpy) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  const auto r =
      run_demo("attention --x " + kData + "x.npy --w-q " + kData + "w_q.npy --w-k " + kData +
               "w_k.npy --w-v " + kData + "w_v.npy --device cpu --dtype f64 --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto lines = test::lines_of(
      test::run_python("import numpy as np\n"
                       "p = np.load('" +
                       kData +
                       "weights_ref.npy')\n"
                       "p = p.reshape(-1, p.shape[-1])\n"
                       "logs = np.log(np.where(p > 0, p, 1.0))\n"
                       "ent = -(p * logs).sum(axis=1)\n"
                       "jac = np.array([np.linalg.norm(np.diag(q) - np.outer(q, q)) for q in p])\n"
                       "for v in (p.max(axis=1), ent, jac):\n"
                       "    print(len(v), repr(v.mean()), repr(v.std(ddof=1)))\n"));
  ASSERT_EQ(lines.size(), 3u);
  const char* names[3] = {"max_weight", "entropy", "jacobian_norm"};
  for (int s = 0; s < 3; ++s) {
    std::istringstream in(lines[s]);
    double n, mean, sd;
    in >> n >> mean >> sd;
    const nlohmann::json* row = nullptr;
    for (const auto& x : doc["tables"][0]["rows"])
      if (x["statistic"] == names[s]) row = &x;
    ASSERT_NE(row, nullptr) << names[s];
    EXPECT_EQ((*row)["rows"].get<double>(), n) << names[s];
    EXPECT_NEAR((*row)["mean"].get<double>(), mean, 1e-13 * std::fabs(mean)) << names[s];
    EXPECT_NEAR((*row)["std"].get<double>(), sd, 1e-13 * sd) << names[s];
  }
}

TEST(AttentionCommand, OutWritesEveryArrayWithTheInputsBatchShape) {
  TempDir d;
  const std::string x = save<double>(d, "x.npy", {2, 0, 1, 1, 0, 2}, {3, 2});
  const std::string wv = save<double>(d, "wv.npy", {1, 0, 2, 0, 1, 2}, {2, 3});
  const std::string wq = save<double>(d, "wq.npy", {1, 0, 0, 1}, {2, 2});
  const auto r = run_demo("attention --x " + x + " --w-q " + wq + " --w-k " + wq + " --w-v " + wv +
                          " --out " + d.file("o") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::pair<const char*, std::vector<std::size_t>> want[] = {
      {"q", {3, 2}},      {"k", {3, 2}},       {"v", {3, 3}},
      {"scores", {3, 3}}, {"weights", {3, 3}}, {"out", {3, 3}}};
  for (const auto& [name, shape] : want) {
    const auto a = load(d.file(std::string("o/") + name + ".npy"));
    EXPECT_EQ(std::vector<std::size_t>(a.shape().begin(), a.shape().end()), shape) << name;
  }
  const auto doc = nlohmann::json::parse(std::ifstream(d.file("o/attention.json")));
  EXPECT_EQ(doc["provenance"]["backend"], "cpu");
  EXPECT_EQ(doc["provenance"]["inputs"]["x"]["path"], x);
  if (std::system("gnuplot --version >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(std::filesystem::exists(d.file("o/attention-weights.png")));
    EXPECT_TRUE(std::filesystem::exists(d.file("o/attention-weights.svg")));
  }
  // A second run into the same folder is refused (nothing replaced) unless --force.
  const auto again = run_demo("attention --x " + x + " --w-q " + wq + " --w-k " + wq + " --w-v " +
                              wv + " --out " + d.file("o") + " --device cpu");
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;
}

// --heads 2 equals two one-head runs on the column halves of the weights, concatenated.
TEST(AttentionCommand, TwoHeadsAreTwoSingleHeadsConcatenated) {
  TempDir d;
  std::vector<double> x(2 * 5 * 4), wq(4 * 4), wk(4 * 4), wv(4 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * i + 0.3);
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = std::cos(1.3 * i), wk[i] = std::sin(2.1 * i);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.4 * i + 1);
  const std::string xf = save(d, "x.npy", x, {2, 5, 4});
  const auto r =
      run_demo("attention --x " + xf + " --w-q " + save(d, "wq.npy", wq, {4, 4}) + " --w-k " +
               save(d, "wk.npy", wk, {4, 4}) + " --w-v " + save(d, "wv.npy", wv, {4, 6}) +
               " --heads 2 --causal --device cpu --out " + d.file("h") + " --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = load(d.file("h/out.npy")), w = load(d.file("h/weights.npy"));
  ASSERT_EQ(out.dimension(), 3u);
  ASSERT_EQ(w.dimension(), 4u);  // (batch, heads, n, n)
  for (int h = 0; h < 2; ++h) {
    std::vector<double> q2, k2, v2;
    for (int row = 0; row < 4; ++row) {
      for (int c = 0; c < 2; ++c)
        q2.push_back(wq[row * 4 + h * 2 + c]), k2.push_back(wk[row * 4 + h * 2 + c]);
      for (int c = 0; c < 3; ++c) v2.push_back(wv[row * 6 + h * 3 + c]);
    }
    const std::string dir = d.file("one" + std::to_string(h));
    const auto one =
        run_demo("attention --x " + xf + " --w-q " + save(d, "q2.npy", q2, {4, 2}) + " --w-k " +
                 save(d, "k2.npy", k2, {4, 2}) + " --w-v " + save(d, "v2.npy", v2, {4, 3}) +
                 " --causal --device cpu --out " + dir + " --no-plots");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const auto o1 = load(dir + "/out.npy"), w1 = load(dir + "/weights.npy");
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 5; ++i) {
        for (int c = 0; c < 3; ++c) EXPECT_EQ(out(b, i, h * 3 + c), o1(b, i, c));
        for (int j = 0; j < 5; ++j) EXPECT_EQ(w(b, h, i, j), w1(b, i, j));
      }
  }
}

// Fortran-order .npy is converted: the same answers as C order.
TEST(AttentionCommand, FortranOrderIsConvertedToCOrder) {
  TempDir d;
  const std::string wk = save<double>(d, "wk.npy", {0, 1, 1, 0}, {2, 2});
  const std::string wq = save<double>(d, "wq.npy", {1, 0, 0, 1}, {2, 2});
  // x = [[2,0],[1,1],[0,2]] stored column by column.
  std::string data;
  for (double v : {2.0, 1.0, 0.0, 0.0, 1.0, 2.0}) data.append(reinterpret_cast<char*>(&v), 8);
  const std::string x =
      raw_npy(d, "xf.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), }", data);
  const auto r = run_demo("attention --x " + x + " --w-q " + wq + " --w-k " + wk + " --w-v " + wq +
                          " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("output    0    [0.277, 1.723]"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Fortran order, converted"), std::string::npos) << r.err;
}

// ---- masks ----------------------------------------------------------------------------------

// A .npy of booleans (numpy's dtype '|b1'), one byte each, in the order given.
std::string bool_npy(const TempDir& d, const std::string& name, const std::vector<int>& bits,
                     const std::string& shape, bool fortran = false) {
  std::string data;
  for (int b : bits) data += char(b != 0);
  return raw_npy(d, name,
                 "{'descr': '|b1', 'fortran_order': " + std::string(fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }",
                 data);
}

// A .npy of little-endian integers of `bytes` bytes (descr '<i4', '|u1', ...).
std::string int_npy(const TempDir& d, const std::string& name, const std::vector<std::int64_t>& v,
                    const std::string& descr, const std::string& shape) {
  const std::size_t word = std::size_t(descr.back() - '0');
  std::string data;
  for (std::int64_t x : v)
    for (std::size_t b = 0; b < word; ++b) data += char((std::uint64_t(x) >> (8 * b)) & 0xff);
  return raw_npy(d, name,
                 "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }",
                 data);
}

// The six output files of two runs hold the same bytes.
void expect_same_files(const std::string& a, const std::string& b) {
  for (const char* name : {"q", "k", "v", "scores", "weights", "out"})
    EXPECT_EQ(test::read_file(a + "/" + name + ".npy"), test::read_file(b + "/" + name + ".npy"))
        << name;
}

// numpy's byte-order marks as numpy reads them on a little-endian machine: '=' (native) and '|'
// on float64 are '<f8'; a one-byte type takes any mark ('<u1' lengths).
TEST(AttentionCommand, NumpyByteOrderMarksAreReadAsNumpyReadsThem) {
  TempDir d;
  const std::vector<double> values = {2, 0, 1, 1, 0, 2};
  const std::string data(reinterpret_cast<const char*>(values.data()), 8 * values.size());
  const std::string w = save<double>(d, "w.npy", {1, 0, 0, 1}, {2, 2});
  const std::string lengths = int_npy(d, "len.npy", {2}, "<u1", "()");
  for (const std::string mark : {"<", "=", "|"}) {
    const std::string x =
        raw_npy(d, "x" + std::to_string(mark[0]) + ".npy",
                "{'descr': '" + mark + "f8', 'fortran_order': False, 'shape': (3, 2), }", data);
    const auto r = run_demo("attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w +
                            " --lengths " + lengths + " --device cpu --no-plots -q --out " +
                            d.file("o" + std::to_string(mark[0])));
    ASSERT_EQ(r.exit_code, 0) << mark << ": " << r.err;
  }
  expect_same_files(d.file("o" + std::to_string('<')), d.file("o" + std::to_string('=')));
  expect_same_files(d.file("o" + std::to_string('<')), d.file("o" + std::to_string('|')));
}

// An input's extension is read in any case (X.NPY, W.CSV, M.JSON), as --per-seed's is.
TEST(AttentionCommand, ExtensionsAreReadInAnyCase) {
  TempDir d;
  const std::string x = save<double>(d, "x.npy", {2, 0, 1, 1, 0, 2}, {3, 2});
  const std::string w = d.write("w.csv", "1,0\n0,1\n"), k = d.write("k.json", "[[0, 1], [1, 0]]");
  std::filesystem::copy_file(x, d.file("X.NPY"));
  std::filesystem::copy_file(w, d.file("W.Csv"));
  std::filesystem::copy_file(k, d.file("K.JSON"));
  const auto lower = run_demo("attention --x " + x + " --w-q " + w + " --w-k " + k + " --w-v " + w +
                              " --device cpu --no-plots -q --out " + d.file("lower"));
  ASSERT_EQ(lower.exit_code, 0) << lower.err;
  const auto upper = run_demo("attention --x " + d.file("X.NPY") + " --w-q " + d.file("W.Csv") +
                              " --w-k " + d.file("K.JSON") + " --w-v " + d.file("W.Csv") +
                              " --device cpu --no-plots -q --out " + d.file("upper"));
  ASSERT_EQ(upper.exit_code, 0) << upper.err;
  expect_same_files(d.file("lower"), d.file("upper"));
}

// The figure's title names the input, the sizes, heads, scale, mask and dtype; with more heads
// than the 8 panels drawn, which heads are drawn.
TEST(AttentionCommand, FigureTitleNamesTheConfiguration) {
  if (std::system("gnuplot --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  TempDir d;
  std::vector<double> x(2 * 3 * 16), w(16 * 16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * i + 0.3);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(1.3 * i);
  const std::string wf = save(d, "w.npy", w, {16, 16});
  const auto r = run_demo(
      "attention --x " + save(d, "words.npy", x, {2, 3, 16}) + " --w-q " + wf + " --w-k " + wf +
      " --w-v " + wf + " --mask " + bool_npy(d, "m.npy", {1, 0, 0, 1, 1, 0, 1, 1, 1}, "(3, 3)") +
      " --heads 16 --scale 0.25 --dtype f32 --device cpu -q --out " + d.file("o"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = test::read_file(d.file("o/attention-weights.svg"));
  for (const char* want :
       {"attention weights of entry 0 of 2",
        "--x words.npy, shape (2, 3, 16): n 3, d_model 16, d_k 16, d_v 16, 16 heads, "
        "scale 0.25, mask m.npy, float32",
        "heads 0 to 7 of 16 drawn"})
    EXPECT_NE(svg.find(want), std::string::npos) << want;
  // One entry (x without a batch axis): no entry to name.
  const auto one = run_demo(
      "attention --x " +
      save(d, "one.npy", std::vector<double>(x.begin(), x.begin() + 48), {3, 16}) + " --w-q " + wf +
      " --w-k " + wf + " --w-v " + wf + " --device cpu -q --out " + d.file("one"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string single = test::read_file(d.file("one/attention-weights.svg"));
  EXPECT_NE(single.find("attention weights (row = query, column = key)"), std::string::npos);
  EXPECT_EQ(single.find("entry"), std::string::npos);
}

// --mask and --lengths against the masked formula computed here in double: each query's
// softmax of scale q.k over its kept keys, zeros for a query with none.
TEST(AttentionCommand, MaskAndLengthsAgreeWithTheMaskedFormula) {
  TempDir d;
  const std::size_t B = 2, n = 4, dm = 3;
  std::vector<double> x(B * n * dm), wq(dm * 2), wk(dm * 2), wv(dm * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.9 * i + 0.2);
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = std::cos(1.1 * i), wk[i] = std::sin(1.7 * i);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.6 * i + 0.5);
  // Shared by the batch, (n, n): query 3 keeps no key; lengths cut entry 1 to keys 0 and 1.
  const std::vector<int> mask = {1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0};
  const std::vector<std::int64_t> lengths = {4, 2};
  const std::string dir = d.file("o");
  const auto r = run_demo(
      "attention --x " + save(d, "x.npy", x, {B, n, dm}) + " --w-q " +
      save(d, "wq.npy", wq, {dm, 2}) + " --w-k " + save(d, "wk.npy", wk, {dm, 2}) + " --w-v " +
      save(d, "wv.npy", wv, {dm, 3}) + " --mask " + bool_npy(d, "m.npy", mask, "(4, 4)") +
      " --lengths " + int_npy(d, "len.npy", lengths, "<i8", "(2,)") +
      " --device cpu --no-plots --out " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = load(dir + "/scores.npy"), w = load(dir + "/weights.npy"),
             o = load(dir + "/out.npy");
  const double scale = 1 / std::sqrt(2.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> e(n, 0.0);
      double z = 0, top = -INFINITY;
      std::vector<bool> kept(n);
      std::vector<double> score(n);
      for (std::size_t j = 0; j < n; ++j) {
        kept[j] = mask[i * n + j] && std::int64_t(j) < lengths[b];
        double dot = 0;
        for (int c = 0; c < 2; ++c) {
          double qi = 0, kj = 0;
          for (std::size_t m = 0; m < dm; ++m) {
            qi += x[(b * n + i) * dm + m] * wq[m * 2 + c];
            kj += x[(b * n + j) * dm + m] * wk[m * 2 + c];
          }
          dot += qi * kj;
        }
        score[j] = scale * dot;
        if (kept[j]) top = std::max(top, score[j]);
      }
      for (std::size_t j = 0; j < n; ++j)
        if (kept[j]) z += (e[j] = std::exp(score[j] - top));
      for (std::size_t j = 0; j < n; ++j) {
        SCOPED_TRACE("entry " + std::to_string(b) + " query " + std::to_string(i) + " key " +
                     std::to_string(j));
        if (!kept[j]) {
          EXPECT_TRUE(std::isinf(s(b, i, j)) && s(b, i, j) < 0);
          EXPECT_EQ(w(b, i, j), 0.0);
        } else {
          EXPECT_NEAR(s(b, i, j), score[j], 1e-12);
          EXPECT_NEAR(w(b, i, j), e[j] / z, 1e-12);
        }
      }
      for (std::size_t c = 0; c < 3; ++c) {
        double want = 0;
        for (std::size_t j = 0; j < n; ++j) {
          double vj = 0;
          for (std::size_t m = 0; m < dm; ++m) vj += x[(b * n + j) * dm + m] * wv[m * 3 + c];
          if (kept[j]) want += e[j] / z * vj;
        }
        if (i == 3)
          EXPECT_EQ(o(b, i, c), 0.0);  // no key left: a zero output
        else
          EXPECT_NEAR(o(b, i, c), want, 1e-12);
      }
    }
  const auto doc = nlohmann::json::parse(std::ifstream(dir + "/attention.json"));
  EXPECT_EQ(doc["provenance"]["masked"], true);
  EXPECT_EQ(doc["provenance"]["inputs"]["lengths"]["shape"], nlohmann::json::array({2}));
}

// A lower-triangular mask is --causal, bit for bit; lengths are their key-padding mask; a
// Fortran-order mask is its C-order twin.
TEST(AttentionCommand, EquivalentMasksGiveTheSameBits) {
  TempDir d;
  std::vector<double> x(2 * 5 * 4), w(4 * 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * i + 0.3);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(1.3 * i);
  const std::string common = "attention --x " + save(d, "x.npy", x, {2, 5, 4}) + " --w-q " +
                             save(d, "w.npy", w, {4, 4}) + " --w-k " + d.file("w.npy") + " --w-v " +
                             d.file("w.npy") +
                             " --heads 2 --device cpu --no-plots --dtype f32 --out ";
  const auto ok = [&](const std::string& dir, const std::string& more) {
    const auto r = run_demo(common + d.file(dir) + more);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  std::vector<int> tril(25), pad(2 * 5), rows(25);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) tril[i * 5 + j] = j <= i, rows[i * 5 + j] = (i + 2 * j) % 3 != 0;
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 5; ++j) pad[b * 5 + j] = j < (b == 0 ? 3 : 1);
  ok("causal", " --causal");
  ok("tril", " --mask " + bool_npy(d, "tril.npy", tril, "(5, 5)"));
  expect_same_files(d.file("causal"), d.file("tril"));
  ok("lengths", " --lengths " + int_npy(d, "len.npy", {3, 1}, "<i4", "(2,)"));
  ok("pad", " --mask " + bool_npy(d, "pad.npy", pad, "(2, 1, 1, 5)"));
  expect_same_files(d.file("lengths"), d.file("pad"));
  // rows transposed, stored column by column: the same (5, 5) mask in Fortran order.
  std::vector<int> columns(25);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) columns[j * 5 + i] = rows[i * 5 + j];
  ok("c", " --mask " + bool_npy(d, "c.npy", rows, "(5, 5)"));
  ok("f", " --mask " + bool_npy(d, "f.npy", columns, "(5, 5)", true));
  expect_same_files(d.file("c"), d.file("f"));
  EXPECT_NE(test::read_file(d.file("c/weights.npy")), test::read_file(d.file("tril/weights.npy")));
}

// ---- non-finite rules through the command -------------------------------------------------

TEST(AttentionCommand, MaskedNaNNeverReachesAVisibleOutputAndIsNamed) {
  TempDir d;
  const std::string one = d.write("one.csv", "1\n");
  for (const std::string dtype : {"f32", "f64"}) {
    const std::string dir = d.file("o" + dtype);
    const auto r = run_demo("attention --x " + d.write("x.csv", "1\nnan\n") + " --w-q " + one +
                            " --w-k " + one + " --w-v " + one + " --causal --dtype " + dtype +
                            " --device cpu --no-plots --out " + dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // float32 files hold float32: read with the right type.
    xt::xarray<double> o, ww;
    if (dtype == "f64") {
      o = load(dir + "/out.npy");
      ww = load(dir + "/weights.npy");
    } else {
      xt::xarray<float> of = xt::load_npy<float>(dir + "/out.npy");
      xt::xarray<float> wf = xt::load_npy<float>(dir + "/weights.npy");
      o = of;
      ww = wf;
    }
    EXPECT_EQ(ww(0, 0), 1.0) << dtype;
    EXPECT_EQ(ww(0, 1), 0.0) << dtype;
    EXPECT_EQ(o(0, 0), 1.0) << dtype;           // word 0 sees only itself
    EXPECT_TRUE(std::isnan(o(1, 0))) << dtype;  // word 1 depends on the NaN
    EXPECT_NE(r.err.find("--x"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nan at [1, 0]"), std::string::npos) << r.err;
  }
}

// A warning is one line whatever the file it names: a newline in the name shown as '?', as
// error lines show it.
TEST(AttentionCommand, AWarningNamingAFileWithANewlineIsOneLine) {
  TempDir d;
  const std::string one = d.write("one.csv", "1\n");
  const std::string x = d.write("x\nwarning: forged.csv", "1\nnan\n");
  const auto r = run_demo("attention --x '" + x + "' --w-q " + one + " --w-k " + one + " --w-v " +
                          one + " --device cpu --no-plots -q --out " + d.file("o"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "demo: warning: --x " + d.file("x?warning: forged.csv") +
                       " holds nan at [1, 0] (the first non-finite input); the outputs that "
                       "depend on it are non-finite, masked keys excepted\n");
}

TEST(AttentionCommand, FloatScoreOverflowGivesWeightOne) {
  TempDir d;
  const std::string x = save<float>(d, "x.npy", {2e19f}, {1, 1});
  const std::string w = save<float>(d, "w.npy", {1.0f}, {1, 1});
  const auto r = run_demo("attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w +
                          " --device cpu --no-plots --out " + d.file("o"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const xt::xarray<float> p = xt::load_npy<float>(d.file("o/weights.npy"));
  const xt::xarray<float> o = xt::load_npy<float>(d.file("o/out.npy"));
  const xt::xarray<float> s = xt::load_npy<float>(d.file("o/scores.npy"));
  EXPECT_TRUE(std::isinf(s(0, 0)) && s(0, 0) > 0);  // 4e38 is beyond float
  EXPECT_EQ(p(0, 0), 1.0f);
  EXPECT_EQ(o(0, 0), 2e19f);
  EXPECT_NE(r.err.find("beyond float32's range"), std::string::npos) << r.err;
}

// ---- bad input: one line naming the file, exit 2, nothing written --------------------------

TEST(AttentionCommand, EveryBadInputIsRefusedBeforeWorkWithOneLine) {
  TempDir d;
  const std::string x = save<double>(d, "x.npy", {2, 0, 1, 1, 0, 2}, {3, 2});
  const std::string w = save<double>(d, "w.npy", {1, 0, 0, 1}, {2, 2});
  const std::string w3 = save<double>(d, "w3.npy", std::vector<double>(12, 1.0), {3, 2, 2});
  const std::string xb = save<double>(d, "xb.npy", std::vector<double>(12, 1.0), {2, 3, 2});
  const std::string w4 = save<double>(d, "w4.npy", std::vector<double>(8, 1.0), {2, 4});
  const std::string w23 = save<double>(d, "w23.npy", std::vector<double>(6, 1.0), {2, 3});
  const std::string w32 = save<double>(d, "w32.npy", std::vector<double>(6, 1.0), {3, 2});
  const std::string full = test::read_file(x);
  const std::string truncated = d.write("trunc.npy", full.substr(0, full.size() - 5));
  std::string i8(6 * 8, '\0'), c16(6 * 16, '\0'), be(6 * 8, '\0');
  const std::string int64 =
      raw_npy(d, "i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 2), }", i8);
  const std::string cplx =
      raw_npy(d, "c16.npy", "{'descr': '<c16', 'fortran_order': False, 'shape': (3, 2), }", c16);
  const std::string bige =
      raw_npy(d, "be.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (3, 2), }", be);
  // A negative dimension: refused as such, not read as 2^64 - 3 and called "too large".
  const std::string negative =
      raw_npy(d, "neg.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (-3, 2), }", be);
  const std::string cores = std::to_string(4 * std::max(1u, std::thread::hardware_concurrency()));
  // n = 1,000,000 words: scores and weights would need 2 x 10^12 doubles (16 TB).
  std::string big_csv;
  for (int i = 0; i < 1000000; ++i) big_csv += "1\n";
  const std::string big = d.write("big.csv", big_csv);
  const std::string one = d.write("one.csv", "1\n");
  // Siblings of the same faults: JSON nested 100,000 deep (a recursive reader would crash), a
  // FIFO (a reader would wait forever), a directory, an empty array.
  const std::string deep =
      d.write("deep.json", std::string(100000, '[') + "1" + std::string(100000, ']'));
  const std::string fifo = d.file("fifo.npy");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directories(d.file("dir.npy"));
  // Ranks the command cannot read: x or a weight as a vector (read as n = 33 past its end before
  // the rank was checked), a scalar, four axes; in every format that can hold them.
  const std::string x1 = save<double>(d, "x1.npy", {2, 0}, {2});
  const std::string x0 = raw_npy(
      d, "x0.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", std::string(8, '\0'));
  const std::string x4 = save<double>(d, "x4.npy", std::vector<double>(6, 1.0), {1, 1, 3, 2});
  const std::string v1 = save<double>(d, "v1.npy", {1, 0}, {2});
  // Masks and lengths that do not fit x (3, 2) or xb (2, 3, 2).
  const std::string m23 = bool_npy(d, "m23.npy", std::vector<int>(6, 1), "(2, 3)");
  const std::string m5 = bool_npy(d, "m5.npy", std::vector<int>(9, 1), "(1, 1, 1, 3, 3)");
  const std::string len_big = int_npy(d, "len4.npy", {3, 4}, "<i8", "(2,)");
  const std::string len_neg = int_npy(d, "lenneg.npy", {-1, 2}, "<i2", "(2,)");
  const std::string len_u64 = int_npy(d, "lenu8.npy", {-1, 2}, "<u8", "(2,)");  // 2^64 - 1
  const std::string len3 = int_npy(d, "len3.npy", {1, 2, 3}, "|u1", "(3,)");
  struct Case {
    std::string args, must_name, must_say;
  };
  auto run = [&](const std::string& xx, const std::string& q, const std::string& k,
                 const std::string& v, const std::string& more = "") {
    return "attention --x " + xx + " --w-q " + q + " --w-k " + k + " --w-v " + v + more;
  };
  const std::vector<Case> cases = {
      {run(d.file("missing.npy"), w, w, w), "missing.npy", "no such file"},
      {run(d.write("x.txt", "1"), w, w, w), "x.txt", "unknown extension '.txt'"},
      {run(truncated, w, w, w), "trunc.npy", "truncated .npy"},
      {run(d.write("r.csv", "1,2\n3\n"), w, w, w), "r.csv", "ragged CSV: line 2 has 1"},
      {run(d.write("bad.csv", "1,x\n3,4\n"), w, w, w), "bad.csv", "'x' is not a number"},
      {run(d.write("huge.csv", "1,1e999\n3,4\n"), w, w, w), "huge.csv",
       "line 1, column 2: '1e999' is outside float64's range"},
      {run(d.write("tiny.csv", "1,2\n3,-1e-400\n"), w, w, w), "tiny.csv",
       "'-1e-400' is outside float64's range"},
      {run(d.write("r.json", "[[1,2],[3]]"), w, w, w), "r.json",
       "not a rectangular array: [1] has 1 entry, expected 2 entries"},
      {run(d.write("m.json", "[[1,2],[3,4]"), w, w, w), "m.json", "malformed JSON"},
      {run(d.write("s.json", "[[1,\"a\"],[3,4]]"), w, w, w), "s.json", "is not a number"},
      {run(int64, w, w, w), "i8.npy", "dtype int64 is refused"},
      {run(cplx, w, w, w), "c16.npy", "dtype complex128 is refused"},
      {run(bige, w, w, w), "be.npy", "big-endian float64 is refused"},
      {run(negative, w, w, w), "neg.npy", "shape (-3, 2) has a negative dimension"},
      {run(x, w32, w, w), "w32.npy", "shape (3, 2) does not fit --x"},
      {run(x, w32, w, w), "x.npy shape (3, 2)", "d_model = 2 rows"},
      {run(x, w, w4, w), "w4.npy", "d_k = 4"},
      {run(x, w, w23, w), "w23.npy", "d_k = 3"},
      {run(x, w, w, w, " --heads 3"), "w.npy", "not divisible"},
      {run(xb, w3, w, w), "w3.npy", "a batch of 3 weight matrices"},
      {run(big, one, one, one), "big.csv", "available"},
      {run(deep, w, w, w), "deep.json", "more than 3 levels"},
      {run(fifo, w, w, w), "fifo.npy", "not a regular file"},
      {run(d.file("dir.npy"), w, w, w), "dir.npy", "not a regular file"},
      {run(d.write("e.json", "[]"), w, w, w), "e.json", "an empty array: no numbers"},
      {run(d.write("e2.json", "[[], []]"), w, w, w), "e2.json",
       "an empty array as the first entry under shape (2,)"},
      {run(x1, w, w, w), "x1.npy", "shape (2,): expected a matrix"},
      {run(x0, w, w, w), "x0.npy", "shape (): expected a matrix"},
      {run(x4, w, w, w), "x4.npy", "shape (1, 1, 3, 2): expected a matrix"},
      {run(d.write("x1.json", "[2, 0]"), w, w, w), "x1.json", "shape (2,): expected a matrix"},
      {run(x, v1, w, w), "v1.npy", "shape (2,): expected a matrix"},
      {run(x, w, v1, w), "v1.npy", "shape (2,): expected a matrix"},
      {run(x, w, w, v1), "v1.npy", "shape (2,): expected a matrix"},
      {run(x, w, w, d.write("v1.json", "[1, 0]")), "v1.json", "shape (2,): expected a matrix"},
      {run(x, w, w, w, " --scale ''"), "--scale", "an empty value"},
      {run(x, w, w, w, " --dtype ''"), "--dtype", "an empty value"},
      {run(x, w, w, w, " --threads ''"), "--threads", "an empty value"},
      {run(x, w, w, w, " --heads ''"), "--heads", "an empty value"},
      {run(x, w, w, w, " --format ''"), "--format", "an empty value"},
      {run(x, w, w, w, " --device ''"), "--device", "an empty value"},
      {run(x, w, w, w, " --scale -1"), "--scale", "--scale"},
      // --dtype f32: a value float32 cannot hold is refused, not made +-inf (NaN outputs).
      {run(d.write("big39.csv", "1e39,0\n1,1\n0,2\n"), w, w, w, " --dtype f32"), "big39.csv",
       "1e+39 at [0, 0] is beyond float32's range (--dtype f32; f64 holds it)"},
      {run(x, w, d.write("wk39.json", "[[1, 0], [0, -1e39]]"), w, " --dtype f32"), "--w-k",
       "-1e+39 at [1, 1] is beyond float32's range"},
      {run(x, w, w, w, " --dtype f32 --scale 1e-300"), "--scale 1e-300", "is 0 in float32"},
      {run(x, w, w, w, " --dtype f32 --scale 1e39"), "--scale 1e39", "is inf in float32"},
      {run(x, w, w, w, " --dtype f16"), "--dtype", "--dtype"},
      {run(x, w, w, w, " --threads 0"), "--threads", "from 1 to " + cores + " "},
      {run(x, w, w, w, " --threads 100000"), "--threads", "from 1 to " + cores + " "},
      {"attention --w-q " + w + " --w-k " + w + " --w-v " + w, "--x", "required"},
      {run(x, w, w, w, " --mask " + x), "--mask " + x, "dtype float64 is refused (booleans only"},
      {run(x, w, w, w, " --mask " + int64), "--mask", "dtype int64 is refused"},
      {run(x, w, w, w, " --mask " + m23), "m23.npy",
       "shape (2, 3) does not broadcast to (heads, n, n) = (1, 3, 3)"},
      {run(xb, w, w, w, " --heads 2 --mask " + m23), "m23.npy", "= (2, 2, 3, 3)"},
      {run(x, w, w, w, " --mask " + m5), "m5.npy", "more than 4 axes"},
      {run(x, w, w, w, " --mask " + d.write("m.csv", "1\n")), "m.csv",
       "expected a .npy file of booleans"},
      {run(x, w, w, w, " --mask " + bige), "--mask", "big-endian float64 is refused"},
      {run(xb, w, w, w, " --lengths " + len_big), "len4.npy", "entry 1 is 4, outside 0 to n = 3"},
      {run(xb, w, w, w, " --lengths " + len_neg), "lenneg.npy", "entry 0 is -1, outside 0 to n"},
      {run(xb, w, w, w, " --lengths " + len_u64), "lenu8.npy",
       "entry 0 is 18446744073709551615, outside 0 to n = 3"},
      {run(xb, w, w, w, " --lengths " + len3), "len3.npy", "shape (3,), expected x's batch"},
      {run(x, w, w, w, " --lengths " + len3), "len3.npy", "expected x's batch shape () or (1,)"},
      {run(xb, w, w, w, " --lengths " + m23), "--lengths", "dtype bool is refused"},
      {run(xb, w, w, w, " --lengths " + x), "--lengths", "dtype float64 is refused"},
  };
  const std::string out = d.file("never");
  for (const Case& c : cases)
    test::expect_refused(c.args + " --device cpu --out " + out, 2, {c.must_name, c.must_say},
                         test::Refusal().leaves_no(out));
  // The CUDA path takes no mask: refused on any build, before any work.
  test::expect_refused(
      run(x, w, w, w, " --mask " + bool_npy(d, "m33.npy", std::vector<int>(9, 1), "(3, 3)")) +
          " --device cuda --out " + out,
      2, {"--mask", "takes no mask"}, test::Refusal().leaves_no(out));
}

// A message quotes a few dozen characters of a file: a long CSV cell, a JSON string cut short
// and a number too long for a double are cut too, never quoted whole.
TEST(AttentionCommand, LongInputIsCutInMessages) {
  TempDir d;
  const std::string w = d.write("w.csv", "1,0\n0,1\n");
  const std::string huge(100000, 'x');
  const std::string files[] = {
      d.write("cell.csv", "1," + huge + "\n3,4\n"),
      d.write("token.json", "[[1,2],[3,\"" + huge),
      d.write("number.json", "[[1,2],[3," + std::string(100000, '9') + "]]"),
  };
  for (const std::string& f : files)
    test::expect_refused(
        "attention --x " + f + " --w-q " + w + " --w-k " + w + " --w-v " + w + " --device cpu", 2,
        {f, f.find("number") == std::string::npos ? "xxxx..." : "9999..."},
        test::Refusal().shorter_than(300 + f.size()));
}

// ---- --out: checked and locked before any work, as the tables' --out ------------------------

// The lesson's checkpoint in CSV files, as `attention --x ... --w-v ...`.
std::string checkpoint_args(const TempDir& d) {
  const std::string x = d.write("x.csv", "2,0\n1,1\n0,2\n"), w = d.write("i.csv", "1,0\n0,1\n");
  return "attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w + " --device cpu";
}

// An output that is one of the inputs (--x io/q.npy --out io) is refused, --force or not: the
// run would replace what it read, and the next run read its output.
TEST(AttentionCommand, AnOutputThatIsAnInputIsRefused) {
  TempDir d;
  std::filesystem::create_directories(d.file("io"));
  const std::vector<double> x = {2, 0, 1, 1, 0, 2}, w = {1, 0, 0, 1};
  const std::string xq = save(d, "io/q.npy", x, {3, 2}), wf = save(d, "io/weights.npy", w, {2, 2});
  const std::string before = test::read_file(xq);
  for (const std::string& mine : {"--x " + xq + " --w-q " + d.file("io/weights.npy"),
                                  "--x " + d.file("io/../io/q.npy") + " --w-q " + wf})
    test::expect_refused("attention " + mine + " --w-k " + wf + " --w-v " + wf +
                             " --device cpu -q --force --out " + d.file("io"),
                         1, {"--out", "is the input", "choose another folder"});
  EXPECT_EQ(test::read_file(xq), before);
  EXPECT_FALSE(std::filesystem::exists(d.file("io/out.npy")));
}

// A destination that cannot be written (a read-only or full file system, /proc) is refused
// before anything is computed or printed: it printed the results, then failed.
TEST(AttentionCommand, OutThatCannotBeWrittenIsRefusedBeforeAnyOutput) {
  TempDir d;
  const std::string args = checkpoint_args(d);
  const auto refused = [&](const std::string& out, const std::string& why) {
    test::expect_refused(args + " --out '" + out + "'", 1, {why});
  };
  refused("/proc", "cannot write there");
  const std::string ro = d.file("ro"), full = d.file("full");
  std::filesystem::create_directories(ro);
  std::filesystem::create_directories(full);
  if (test::run_command("mount -t tmpfs -o size=64k,ro tmpfs '" + ro + "'").exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root and mount rights)";
  refused(ro, "Read-only file system");
  refused(ro + "/sub", "Read-only file system");
  test::run_command("umount '" + ro + "'");
  ASSERT_EQ(test::run_command("mount -t tmpfs -o size=4k tmpfs '" + full + "'").exit_code, 0);
  test::run_command("dd if=/dev/zero of='" + full + "/fill' bs=1k count=64 2>/dev/null");
  refused(full, "No space left on device");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(full))
    left.push_back(e.path().filename().string());
  test::run_command("umount '" + full + "'");
  EXPECT_EQ(left, std::vector<std::string>{"fill"});
}

// A failed write to stdout leaves no --out folder behind (not even an empty one), and no file in
// a folder that was there.
TEST(AttentionCommand, FullStdoutLeavesNoOutFolderAndNoFiles) {
  TempDir d;
  const std::string args = checkpoint_args(d);
  const std::string fresh = d.file("fresh"), there = d.file("there");
  std::filesystem::create_directories(there);
  for (const std::string& out : {fresh, there}) {
    SCOPED_TRACE(out);
    const auto r = run_demo(args + " --out '" + out + "' > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write to stdout"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::is_empty(there));
  // And a run that works writes every file, removing what a killed run left (a process that
  // has ended: a child that exited at once).
  const std::string stale = there + "/q.npy.tmp-" + std::to_string(test::dead_pid());
  test::write_file(stale, "half");
  const auto ok = run_demo(args + " --out '" + there + "' --no-plots");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("removed " + stale), std::string::npos) << ok.err;
  EXPECT_FALSE(std::filesystem::exists(stale));
  for (const char* f :
       {"q.npy", "k.npy", "v.npy", "scores.npy", "weights.npy", "out.npy", "attention.json"})
    EXPECT_TRUE(std::filesystem::exists(there + "/" + f)) << f;
  // Several: one line, a notice (-q silences it).
  for (const char* f : {"q.npy", "k.npy", "v.npy"})
    test::write_file(there + "/" + f + ".tmp-" + std::to_string(test::dead_pid()), "half");
  const auto many = run_demo(args + " --out '" + there + "' --no-plots --force");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.err.find("removed 3 temporary files left by an earlier run that was killed"),
            std::string::npos)
      << many.err;
  EXPECT_EQ(many.err.find("removed " + there + "/k.npy"), std::string::npos) << many.err;
  test::write_file(there + "/out.npy.tmp-" + std::to_string(test::dead_pid()), "half");
  const auto quiet = run_demo(args + " --out '" + there + "' --no-plots --force -q");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("removed"), std::string::npos) << quiet.err;
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// ---- Ctrl-C and SIGTERM: honoured in the kernels and after them --------------------------------

// A problem far longer than the moment the signal comes (n = 8192, d = 64: about 10^10
// multiply-adds): the signal is sent once demo says it computes, and demo must stop with 130 or
// 143 and leave no file. Before, it ignored both and wrote every file.
TEST(AttentionCommand, SignalsStopTheKernelsAndLeaveNoFiles) {
  TempDir d;
  std::vector<float> x(8192 * 64), w(64 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i)));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(std::cos(double(i))) / 8;
  const std::string xs = save<float>(d, "x.npy", x, {8192, 64});
  const std::string ws = save<float>(d, "w.npy", w, {64, 64});
  for (const auto& [heads, sig] : {std::pair{1, SIGTERM}, std::pair{2, SIGINT}}) {
    const std::string out = d.file("o" + std::to_string(heads));
    const auto r = test::signal_when_ready(
        "attention --x " + xs + " --w-q " + ws + " --w-k " + ws + " --w-v " + ws + " --heads " +
            std::to_string(heads) + " --device cpu -v --out " + out,
        "attention: computing", sig);
    SCOPED_TRACE(r.err);
    ASSERT_TRUE(r.ready);
    EXPECT_FALSE(r.hung) << "the signal was ignored";
    EXPECT_EQ(r.exit_code, 128 + sig);
    EXPECT_NE(r.err.find("interrupted"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(out)) << "the folder demo made is removed again";
  }
}

// ---- .npy headers: numpy's format, read as written ---------------------------------------

// A .npy file of format `major`.0 (1: a 2-byte header length; 2 and 3: 4 bytes) with any header
// dict and data bytes.
std::string npy_version(const TempDir& d, const std::string& name, int major,
                        const std::string& dict, const std::string& data) {
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((8 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += char(major);
  bytes += char(0);
  for (std::size_t i = 0; i < len_bytes; ++i) bytes += char((header.size() >> (8 * i)) & 0xff);
  return d.write(name, bytes + header + data);
}

std::string doubles(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), 8 * v.size());
}

// Format 3.0 (2.0 with a UTF-8 header, numpy writes it for headers that need one) and 2.0 are
// read as 1.0 is: the same answers. So are a dict in another key order, double quotes and a
// header over 127 bytes (whose length bytes are above 0x7f).
TEST(AttentionCommandNpy, Versions2And3AndAnyKeyOrderAreRead) {
  TempDir d;
  const std::vector<double> x = {2, 0, 1, 1, 0, 2};
  const std::string w = save<double>(d, "w.npy", {1, 0, 0, 1}, {2, 2});
  const auto run = [&](const std::string& xf) {
    return run_demo("attention --x " + xf + " --w-q " + w + " --w-k " + w + " --w-v " + w +
                    " --device cpu --format csv -q");
  };
  const auto one = run(save<double>(d, "x1.npy", x, {3, 2}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }";
  for (int major : {1, 2, 3}) {
    const auto r =
        run(npy_version(d, "v" + std::to_string(major) + ".npy", major, dict, doubles(x)));
    EXPECT_EQ(r.exit_code, 0) << "format " << major << ".0: " << r.err;
    EXPECT_EQ(r.out, one.out) << "format " << major << ".0";
  }
  const std::string others[] = {
      "{'shape': (3, 2), 'fortran_order': False, 'descr': '<f8'}",
      "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3,2)}",
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }" + std::string(200, ' ')};
  for (const std::string& other : others) {
    const auto r = run(npy_version(d, "o.npy", 3, other, doubles(x)));
    EXPECT_EQ(r.exit_code, 0) << other << ": " << r.err;
    EXPECT_EQ(r.out, one.out) << other;
  }
}

// A header numpy would not read is refused as malformed, naming what: the shape's bad entry
// ((5, five) is not (5, 0)), and every other way the dict can be wrong.
TEST(AttentionCommandNpy, MalformedHeadersAreRefusedNamingTheFault) {
  TempDir d;
  const std::string w = save<double>(d, "w.npy", {1, 0, 0, 1}, {2, 2});
  const std::string data = doubles({2, 0, 1, 1, 0, 2});
  const auto dict = [](const std::string& shape) {
    return "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const std::pair<std::string, std::string> cases[] = {
      {dict("(5, five)"), "shape (5, five): entry 1 'five' is not a whole number"},
      {dict("(five, 2)"), "entry 0 'five' is not a whole number"},
      {dict("(3, 2.0)"), "entry 1 '2.0' is not a whole number"},
      {dict("(3, 2 2)"), "entry 1 '2 2' is not a whole number"},
      {dict("(3,, 2)"), "entry 1 '' is not a whole number"},
      {dict("(3, 0x2)"), "entry 1 '0x2' is not a whole number"},
      {dict("(3, 02)"), "entry 1 '02' has a leading zero"},
      {dict("(3, -2)"), "shape (3, -2) has a negative dimension"},
      {dict("(3, 99999999999999999999999)"), "entry 1 is too large"},
      {dict("(6)"), "is a number, not a tuple"},
      {dict("[3, 2]"), "is not a tuple"},
      {"{'descr': '<f8', 'fortran_order': False}", "no 'shape'"},
      {"{'descr': '<f8', 'shape': (3, 2)}", "no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (3, 2)}", "no 'descr'"},
      {"{'descr': '<f8', 'fortran_order': Maybe, 'shape': (3, 2)}", "not True or False"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), 'x': 1}", "unknown key 'x'"},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3, 2)}",
       "'descr' twice"},
      {"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,)}", "structured dtype"},
      {"{'descr': '<f8' 'fortran_order': False, 'shape': (3, 2)}", "no ',' or '}'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2)} x", "text after the dictionary"},
      {"('descr', '<f8')", "not a dictionary"},
  };
  for (const auto& [header, says] : cases) {
    const std::string x = npy_version(d, "bad.npy", 1, header, data);
    test::expect_refused(
        "attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w + " --device cpu", 2,
        {"--x " + x + ": malformed .npy header", says});
  }
  // The same parse reads masks and lengths.
  const std::string x = save<double>(d, "x.npy", {2, 0, 1, 1, 0, 2}, {3, 2});
  const std::string m =
      npy_version(d, "m.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3, three), }",
                  std::string(9, '\1'));
  test::expect_refused("attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w +
                           " --device cpu --mask " + m,
                       2, {"--mask " + m, "entry 1 'three' is not a whole number"});
  // Versions that do not exist.
  for (const char* version : {"\x04\x00", "\x01\x01", "\x00\x00"}) {
    std::string bytes = "\x93NUMPY";
    bytes += std::string(version, 2);
    bytes += std::string("\x10\x00", 2) + std::string(15, ' ') + "\n";
    const std::string f = d.write("ver.npy", bytes);
    test::expect_refused(
        "attention --x " + f + " --w-q " + w + " --w-k " + w + " --w-v " + w + " --device cpu", 2,
        {"unsupported .npy format version"});
  }
}

// ---- Stops while the inputs are read and converted ------------------------------------------
// The stop audit (host/progress.hpp) covers reading, parsing and converting: each phase's
// stop checks come at least once per its budget of units, and a stop asked for in a phase is
// honoured there (exit 130, nothing on stdout), never answered by a refusal that follows (an x
// of 2,000,000 rows is refused for memory once read).
TEST(AttentionCommandStops, ReadingParsingAndConvertingStopAndAreAudited) {
  TempDir d;
  const std::string w = d.write("w.csv", "1\n");
  const std::string csv = d.write("x.csv", [] {
    std::string s;
    for (int i = 0; i < 2000000; ++i) s += "0.5\n";
    return s;
  }());
  std::string json = "[";
  for (int i = 0; i < 1500000; ++i) json += i ? ",[0.5]" : "[0.5]";
  const std::string js = d.write("x.json", json + "]");
  const std::string npy = save<float>(d, "x.npy", std::vector<float>(8000000, 0.5f), {8000000, 1});
  const std::string fortran = npy_version(
      d, "xf.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (4000000, 2), }",
      std::string(32000000, '\0'));
  const auto args = [&](const std::string& x) {
    return "attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " + w + " --device cpu";
  };
  struct Phase {
    std::string x, label;
    double budget;  // units between two stop checks
  };
  const std::vector<Phase> phases = {{csv, "reading " + csv, 64 << 20},
                                     {csv, "parsing --x " + csv, (1 << 22) + 64},
                                     {js, "parsing --x " + js, 1 << 20},
                                     {js, "converting --x " + js, 1 << 20},
                                     {npy, "converting --x " + npy, (1 << 22) + (1 << 16)},
                                     {fortran, "reordering --x " + fortran, (1 << 22) + (1 << 16)},
                                     {fortran, "converting --x " + fortran, (1 << 22) + (1 << 16)}};
  for (const Phase& p : phases) {
    SCOPED_TRACE(p.label);
    // Never asked to stop: the audit of each phase, then the memory refusal.
    const auto r = run_demo(args(p.x), "ATTNLAB_STOP_AUDIT=1000000000");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const double most = test::stop_audit(r.err, p.label);
    EXPECT_GE(most, 0) << "no stop audit of " << p.label << " in:\n" << r.err;
    EXPECT_LE(most, p.budget);
  }
  // Asked to stop early (as Ctrl-C would) while reading or converting x: 130, not the refusal.
  for (const std::string& x : {csv, js, npy, fortran}) {
    SCOPED_TRACE(x);
    const auto r = run_demo(args(x) + " -q", "ATTNLAB_STOP_AUDIT=3");
    EXPECT_EQ(r.exit_code, 130) << r.err;
    EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("needs about"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace
}  // namespace attn
