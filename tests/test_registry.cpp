// test_registry.cpp: the tables' declarations (experiments/registry.hpp, host/settings.hpp) are
// consistent, and the driver in host/ knows no table by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "experiments/registry.hpp"
#include "helpers.hpp"

namespace attn {
namespace {

// A flag several tables declare is one command-line option: same kind of value for all.
TEST(Registry, SharedFlagsHaveOneKind) {
  std::map<std::string, std::string> kind_of;
  for (const auto& e : experiments())
    for (const Param& p : e.params) {
      const auto [it, fresh] = kind_of.emplace(p.flag, p.kind);
      EXPECT_EQ(it->second, p.kind) << p.flag << " in " << e.name;
      (void)fresh;
    }
  EXPECT_GE(kind_of.size(), 15u);
}

// Every table's defaults parse, and each flag appears once per table.
TEST(Registry, DefaultsParseAndFlagsAreUniquePerTable) {
  for (const auto& e : experiments()) {
    std::set<std::string> flags;
    for (const Param& p : e.params) EXPECT_TRUE(flags.insert(p.flag).second) << e.name << p.flag;
    EXPECT_NO_THROW((void)Settings::parse(e.params, {})) << e.name;
  }
}

// Figure files never collide between tables (they share one --out folder).
TEST(Registry, FigureFilesAreUnique) {
  std::set<std::string> files;
  for (const auto& e : experiments())
    for (const auto& f : figure_names(e.figures)) {
      EXPECT_TRUE(files.insert(f).second) << f;
      EXPECT_NE(f, e.name + ".csv");
      EXPECT_NE(f, e.name + ".json");
    }
  EXPECT_EQ(files.size(), 20u);  // ten figures, PNG and SVG
}

// Settings: given values override defaults; errors name the flag; types are checked.
TEST(Settings, GivenDefaultAndErrors) {
  const std::vector<Param> params = {param::real("--x", "0.5", "x", 0, 1, false),
                                     param::int_list("--l", "1,2", "l", 1, 9),
                                     param::output_file("--file", "f", {".csv"})};
  const Settings d = Settings::parse(params, {});
  EXPECT_EQ(d.get<double>("--x"), 0.5);
  EXPECT_FALSE(d.given("--x"));
  EXPECT_EQ(d.get<std::vector<std::int64_t>>("--l"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(d.get<std::string>("--file"), "");
  const Settings g = Settings::parse(params, {{"--x", "0.25"}, {"--file", "a.csv"}});
  EXPECT_EQ(g.get<double>("--x"), 0.25);
  EXPECT_TRUE(g.given("--x"));
  EXPECT_EQ(g.get<std::string>("--file"), "a.csv");
  try {
    (void)Settings::parse(params, {{"--x", "2"}});
    ADD_FAILURE() << "--x 2 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--x"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)Settings::parse(params, {{"--file", ""}}), std::invalid_argument);
  EXPECT_THROW((void)Settings::parse(params, {{"--nosuch", "1"}}), std::logic_error);
  EXPECT_THROW((void)d.get<std::string>("--x"), std::logic_error);
  EXPECT_THROW((void)d.get<double>("--nosuch"), std::logic_error);
}

// The driver is generic: no file in host/ names a table (git grep finds no table name in
// host/). Words that are also ordinary words (knob, training) are matched as quoted names.
TEST(Registry, HostNamesNoTable) {
  const std::string host = std::string(ATTN_SOURCE_DIR) + "/host";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(host)) {
    const std::string text = test::read_file(entry.path());
    ++files;
    for (const auto& e : experiments()) {
      const std::string quoted = "\"" + e.name + "\"";
      EXPECT_EQ(text.find(quoted), std::string::npos) << entry.path() << " names " << quoted;
      if (e.name.find('-') != std::string::npos) {
        EXPECT_EQ(text.find(e.name), std::string::npos) << entry.path() << " names " << e.name;
      }
    }
  }
  EXPECT_GT(files, 10);
}

// The backend named in a table's provenance is the one that ran its kernels.
TEST(Registry, BackendIsRecordedOnce) {
  Options o;
  o.quiet = true;
  const Backend cpu = Backend::select("cpu", 1);
  EXPECT_EQ(run_experiment(*find_experiment("rnn-decay"), o, {}, cpu).at(0).run["backend"], "host");
  EXPECT_EQ(run_experiment(*find_experiment("self-attention"), o, {}, cpu).at(0).run["backend"],
            "cpu");
  // dk-std's numpy stream runs on the host; Philox on the backend.
  EXPECT_EQ(run_experiment(*find_experiment("dk-std"), o, {{"--samples", "100"}}, cpu)
                .at(0)
                .run["backend"],
            "host");
  EXPECT_EQ(run_experiment(*find_experiment("dk-std"), o,
                           {{"--samples", "100"}, {"--rng", "philox"}}, cpu)
                .at(0)
                .run["backend"],
            "cpu");
}

}  // namespace
}  // namespace attn
