// small_attention.cpp: see small_attention.hpp.
#include "experiments/small_attention.hpp"

#include <cstdio>
#include <sstream>

#include "host/format.hpp"
#include "host/plots.hpp"

namespace attn {

std::vector<SmallResult> run_small(const Backend& b, const std::vector<SmallCase>& cases,
                                   double scale) {
  const int batch = static_cast<int>(cases.size());
  std::vector<double> x, wq, wk, wv;
  for (const auto& c : cases) {
    x.insert(x.end(), c.x.begin(), c.x.end());
    wq.insert(wq.end(), c.w_q.begin(), c.w_q.end());
    wk.insert(wk.end(), c.w_k.begin(), c.w_k.end());
    wv.insert(wv.end(), c.w_v.begin(), c.w_v.end());
  }
  std::vector<double> q(batch * 6), k(batch * 6), v(batch * 6), s(batch * 9), w(batch * 9),
      o(batch * 6);
  AttentionProblem<double> p;
  p.shape = AttentionShape{batch, 3, 2, 2, 2, false, false, scale};
  p.x = x.data();
  p.w_q = wq.data();
  p.w_k = wk.data();
  p.w_v = wv.data();
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.scores = s.data();
  p.weights = w.data();
  p.out = o.data();
  b.attention_forward(p);
  std::vector<SmallResult> r(batch);
  for (int i = 0; i < batch; ++i) {
    for (int j = 0; j < 6; ++j) {
      r[i].q[j] = q[i * 6 + j];
      r[i].k[j] = k[i * 6 + j];
      r[i].v[j] = v[i * 6 + j];
      r[i].out[j] = o[i * 6 + j];
    }
    for (int j = 0; j < 9; ++j) {
      r[i].scores[j] = s[i * 9 + j];
      r[i].weights[j] = w[i * 9 + j];
    }
  }
  return r;
}

std::string matrix_text(const Mat22& m) {
  return "[[" + human_number(m[0]) + ", " + human_number(m[1]) + "], [" + human_number(m[2]) +
         ", " + human_number(m[3]) + "]]";
}

std::string words_text(const Mat32& x) {
  std::string s;
  for (std::size_t i = 0; i < kWords.size(); ++i)
    s += (i ? ", " : "") + kWords[i] + " [" + human_number(x[2 * i]) + ", " +
         human_number(x[2 * i + 1]) + "]";
  return s;
}

std::string weight_heatmaps_script(const Table& t) {
  using plot::text;
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>> mats;
  std::vector<std::string> cases;  // each panel's case
  const std::size_t c_case = t.column("case"), c_quantity = t.column("quantity"),
                    c_values = t.column("values");
  for (const auto& r : t.rows) {
    const std::string quantity = text(r[c_quantity]);
    if (quantity.rfind("weights", 0) != 0) continue;
    const std::string label =
        text(r[c_case]) + (quantity == "weights" ? "" : ", " + quantity.substr(9));
    if (mats.empty() || mats.back().first != label) {
      mats.push_back({label, {}});
      cases.push_back(text(r[c_case]));
    }
    mats.back().second.push_back(std::get<std::vector<double>>(r[c_values]));
  }
  if (mats.empty()) return "";
  const auto case_text = [&t](const std::string& name) -> std::string {
    if (!t.run.is_object() || !t.run.contains("cases")) return "";
    const nlohmann::json& c = t.run["cases"];
    return c.is_object() && c.contains(name) && c[name].is_string() ? c[name].get<std::string>()
                                                                    : "";
  };
  std::ostringstream s;
  s << "set multiplot layout 1," << mats.size() << " title "
    << plot::title_lines(
           {t.name + ": attention weights (row: the query, column: the key it looks at)",
            plot::run_text(t, "setup")},
           160)
    << " noenhanced\n"
    << "set palette defined (0 '#ffffff', 1 '#6f9fd8')\nset cbrange [0:1]\nunset colorbox\n"
    << "set xtics ('cat' 0, 'dog' 1, 'car' 2)\nset ytics ('cat' 0, 'dog' 1, 'car' 2)\n"
    << "set yrange [2.5:-0.5]\nset xrange [-0.5:2.5]\nset size ratio 1\n";
  const std::size_t width = mats.size() <= 3 ? 60 : 45;  // characters across one panel
  for (std::size_t m = 0; m < mats.size(); ++m) {
    s << "$M" << m << " << EOD\n";
    for (std::size_t i = 0; i < mats[m].second.size(); ++i)
      for (std::size_t j = 0; j < mats[m].second[i].size(); ++j)
        s << j << " " << i << " " << round_trip(mats[m].second[i][j]) << "\n";
    s << "EOD\nset title " << plot::title_lines({mats[m].first, case_text(cases[m])}, width)
      << " noenhanced\n"
      << "plot " << plot::cells("$M" + std::to_string(m), "1", "2", "3") << ", $M" << m
      << " using 1:2:(sprintf('%.3f', $3)) with labels tc rgb '#000000' notitle\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

}  // namespace attn
