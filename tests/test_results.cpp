// test_results.cpp: results/cpu is what `demo --table all --out results/cpu` made; a fresh run
// must reproduce its numbers (the tables are deterministic: fixed seeds and fixed merge order).
#include <gtest/gtest.h>

#include <filesystem>

#include "helpers.hpp"
#include "host/compare.hpp"

namespace attn {
namespace {

TEST(Results, FreshRunReproducesResultsCpu) {
  const std::string dir = std::string(ATTN_SOURCE_DIR) + "/results/cpu";
  const auto fresh = test::run_demo("--device cpu --format json -q");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  const auto now = nlohmann::json::parse(fresh.out);
  int tables = 0;
  for (const auto& t : now["tables"]) {
    const std::string path = dir + "/" + t["name"].get<std::string>() + ".json";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    nlohmann::json fresh_doc = {{"tables", nlohmann::json::array({t})}};
    const auto diffs = compare_results(test::read_json(path), fresh_doc);
    ASSERT_EQ(diffs.size(), 1u);
    EXPECT_TRUE(diffs[0].mismatch.empty()) << diffs[0].table << ": " << diffs[0].mismatch;
    EXPECT_LE(diffs[0].max_rel, 1e-12) << diffs[0].table << " at " << diffs[0].where;
    ++tables;
  }
  EXPECT_EQ(tables, 7);
}

}  // namespace
}  // namespace attn
