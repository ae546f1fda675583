// test_parse.cpp: host/parse.hpp: strict parsing of option values; every error names the option
// and echoes the bad value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "host/parse.hpp"

namespace attn {
namespace {

// The message of the std::invalid_argument that f throws; "<no error>" when it does not throw.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<wrong exception type> ") + e.what();
  }
  return "<no error>";
}

// The error names the option and quotes the bad value, on one line.
void expect_rejected(const std::string& option, const std::string& bad,
                     const std::function<void()>& f) {
  const std::string msg = error_of(f);
  EXPECT_NE(msg, "<no error>") << option << " accepted '" << bad << "'";
  EXPECT_EQ(msg.rfind("<wrong exception type>", 0), std::string::npos) << msg;
  EXPECT_NE(msg.find(option), std::string::npos)
      << "message does not name " << option << ": " << msg;
  EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos)
      << "message does not echo '" << bad << "': " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// ---- parse_count -----------------------------------------------------------------------------

TEST(ParseCount, PlainAndExponentForms) {
  EXPECT_EQ(parse_count("--samples", "10000"), 10000u);
  EXPECT_EQ(parse_count("--samples", "1"), 1u);
  EXPECT_EQ(parse_count("--samples", "1e9"), 1000000000u);
  EXPECT_EQ(parse_count("--samples", "2.5e6"), 2500000u);
  EXPECT_EQ(parse_count("--samples", "1E3"), 1000u);
  EXPECT_EQ(parse_count("--samples", "9007199254740992"), 9007199254740992u);  // 2^53
}

TEST(ParseCount, RejectsWhatIsNotAPositiveWholeNumber) {
  for (const std::string bad : {"0", "-3", "abc", "1.5", "", "nan", "inf", "-inf", "1e300", "0.5",
                                "1e-3", "10 ", " 10", "10k", "1e", "9007199254740994"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--samples", bad, [&] { parse_count("--samples", bad); });
  }
}

// Reading the text through a double rounds it first: "9007199254740993" (2^53 + 1, above the
// documented maximum 2^53) and "1.0000000000000001" (not a whole number) both become whole
// doubles and are accepted as a different number than the user wrote.
TEST(ParseCount, RejectsValuesThatOnlyBecomeValidAfterRounding) {
  expect_rejected("--samples", "9007199254740993",
                  [] { parse_count("--samples", "9007199254740993"); });
  expect_rejected("--samples", "1.0000000000000001",
                  [] { parse_count("--samples", "1.0000000000000001"); });
}

// ---- parse_u64 -------------------------------------------------------------------------------

TEST(ParseU64, WholeRange) {
  EXPECT_EQ(parse_u64("--seed", "0"), 0u);
  EXPECT_EQ(parse_u64("--seed", "42"), 42u);
  EXPECT_EQ(parse_u64("--seed", "18446744073709551615"), UINT64_MAX);
  // As a count is written (--seeds 0:1e6), exactly, over the whole range.
  EXPECT_EQ(parse_u64("--seed", "1e3"), 1000u);
  EXPECT_EQ(parse_u64("--seed", "1.0"), 1u);
  EXPECT_EQ(parse_u64("--seed", "9.007199254740992e15"), 9007199254740992u);
  EXPECT_EQ(parse_u64("--seed", "1e16"), 10000000000000000u);
  EXPECT_EQ(parse_u64("--seed", "9007199254740993.0"), 9007199254740993u);  // 2^53 + 1
  EXPECT_EQ(parse_u64("--seed", "1.8446744073709551615e19"), UINT64_MAX);
  EXPECT_EQ(parse_u64("--seed", "0e9999"), 0u);
  EXPECT_EQ(parse_seed_set("--seeds", "0:1e6").end, 1000000u);
}

TEST(ParseU64, RejectsSignsFractionsAndOverflow) {
  for (const std::string bad :
       {"-1", "1.5", "", "+1", "abc", " 1", "1 ", "0x10", "1e20", "18446744073709551616",
        "99999999999999999999", "1.8446744073709551616e19", "2e19", "1e9999",
        "1.00000000000000000001e19"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--seed", bad, [&] { parse_u64("--seed", bad); });
  }
}

// ---- parse_int -------------------------------------------------------------------------------

TEST(ParseInt, InclusiveRange) {
  EXPECT_EQ(parse_int("--keys", "1", 1, 65536), 1);
  EXPECT_EQ(parse_int("--keys", "65536", 1, 65536), 65536);
  EXPECT_EQ(parse_int("--keys", "300", 1, 65536), 300);
  EXPECT_EQ(parse_int("--x", "-5", -10, 10), -5);
  EXPECT_EQ(parse_int("--x", "-10", -10, 10), -10);
  EXPECT_EQ(parse_int("--x", "9223372036854775807", 0, INT64_MAX), INT64_MAX);
  // As a count is written (parse_count): exact whole numbers in exponent or decimal form.
  EXPECT_EQ(parse_int("--keys", "1.0", 1, 65536), 1);
  EXPECT_EQ(parse_int("--keys", "1e3", 1, 65536), 1000);
  EXPECT_EQ(parse_int("--keys", "6.5536e4", 1, 65536), 65536);
  EXPECT_EQ(parse_int("--x", "1e18", 0, INT64_MAX), 1000000000000000000);
}

TEST(ParseInt, RejectsOutOfRangeAndNonIntegers) {
  for (const std::string bad : {"0", "65537", "-1", "1.5", "1e5", "1e", "-1e3", "", "abc", "3x",
                                "9223372036854775808", "0.5e1x"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--keys", bad, [&] { parse_int("--keys", bad, 1, 65536); });
  }
  for (const std::string bad : {"9.223372036854775808e18", "1e19", "2e19"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--x", bad, [&] { parse_int("--x", bad, 0, INT64_MAX); });
  }
  // The message says the allowed range.
  const std::string msg = error_of([] { parse_int("--keys", "0", 1, 65536); });
  EXPECT_NE(msg.find("1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("65536"), std::string::npos) << msg;
}

// --threads: 1 to 4 per core, and the message states this machine's range (never "1 to
// 1073741824" while anything above 4 per core is refused).
TEST(ParseThreads, TheMessageStatesThisMachinesRange) {
  const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(parse_threads("--threads", "1"), 1);
  EXPECT_EQ(parse_threads("--threads", "1e0"), 1);
  EXPECT_EQ(parse_threads("--threads", std::to_string(4 * cores)), 4 * cores);
  for (const std::string& bad : std::vector<std::string>{
           "0", "-1", "abc", "", "1.5", std::to_string(4 * cores + 1), "100000", "1073741824"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--threads", bad, [&] { parse_threads("--threads", bad); });
    const std::string msg = error_of([&] { parse_threads("--threads", bad); });
    EXPECT_NE(msg.find("from 1 to " + std::to_string(4 * cores) + " "), std::string::npos) << msg;
    EXPECT_EQ(msg.find("to 1073741824"), std::string::npos) << msg;
  }
}

// ---- parse_real ------------------------------------------------------------------------------

TEST(ParseReal, OpenAndClosedLowerBound) {
  EXPECT_EQ(parse_real("--lr", "0.5", 0, 1e6, true), 0.5);
  EXPECT_EQ(parse_real("--lr", "1e-3", 0, 1e6, true), 0.001);
  EXPECT_EQ(parse_real("--lr", "1e6", 0, 1e6, true), 1e6);
  EXPECT_EQ(parse_real("--w", "0", 0, 1, false), 0.0);
  EXPECT_EQ(parse_real("--w", "-1e6", -1e6, 1e6, false), -1e6);
  EXPECT_EQ(parse_real("--w", "-0.25", -1e6, 1e6, false), -0.25);
  expect_rejected("--lr", "0", [] { parse_real("--lr", "0", 0, 1e6, true); });
  expect_rejected("--lr", "-0.1", [] { parse_real("--lr", "-0.1", 0, 1e6, false); });
  expect_rejected("--lr", "1000001", [] { parse_real("--lr", "1000001", 0, 1e6, true); });
}

TEST(ParseReal, RejectsNonFiniteAndNonNumbers) {
  for (const std::string bad :
       {"nan", "NaN", "inf", "-inf", "infinity", "", "abc", "1.5x", "1e400", " 1"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--lr", bad, [&] { parse_real("--lr", bad, 0, 1e300, true); });
  }
}

// ---- parse_int_list --------------------------------------------------------------------------

TEST(ParseIntList, CommaList) {
  EXPECT_EQ(parse_int_list("--d-k", "2,64,512", 1, 1 << 20),
            (std::vector<std::int64_t>{2, 64, 512}));
  EXPECT_EQ(parse_int_list("--d-k", "7", 1, 1 << 20), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(parse_int_list("--n", "0,1,2,3", 0, 10), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(ParseIntList, RejectsEmptyItemsAndBadValues) {
  for (const std::string bad : {"2,,3", "2,abc", "", ",2", "2,", "2,0", "2;3", "2, 3"}) {
    SCOPED_TRACE("'" + bad + "'");
    const std::string msg = error_of([&] { parse_int_list("--d-k", bad, 1, 1 << 20); });
    EXPECT_NE(msg, "<no error>") << "accepted '" << bad << "'";
    EXPECT_NE(msg.find("--d-k"), std::string::npos) << msg;
  }
  const std::string msg = error_of([] { parse_int_list("--d-k", "2,abc", 1, 1 << 20); });
  EXPECT_NE(msg.find("abc"), std::string::npos) << msg;
}

// ---- parse_seed_set --------------------------------------------------------------------------

TEST(ParseSeedSet, HalfOpenRange) {
  const SeedSet s = parse_seed_set("--seeds", "0:100000");
  EXPECT_TRUE(s.is_range);
  EXPECT_EQ(s.size(), 100000u);
  EXPECT_EQ(s.at(0), 0u);
  EXPECT_EQ(s.at(99999), 99999u);
  EXPECT_EQ(s.text(), "0:100000");

  const SeedSet one = parse_seed_set("--seeds", "5:6");
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(one.at(0), 5u);

  const SeedSet top = parse_seed_set("--seeds", "18446744073709551614:18446744073709551615");
  EXPECT_EQ(top.size(), 1u);
  EXPECT_EQ(top.at(0), 18446744073709551614u);
}

TEST(ParseSeedSet, List) {
  const SeedSet s = parse_seed_set("--seeds", "0,1,7");
  EXPECT_FALSE(s.is_range);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.at(0), 0u);
  EXPECT_EQ(s.at(1), 1u);
  EXPECT_EQ(s.at(2), 7u);
  EXPECT_EQ(s.text(), "0,1,7");
  const SeedSet single = parse_seed_set("--seeds", "42");
  EXPECT_EQ(single.size(), 1u);
  EXPECT_EQ(single.at(0), 42u);
}

TEST(ParseSeedSet, TextReadsBackAsTheSameSet) {
  for (const std::string text : {"0:100000", "3:4", "0,1,7", "9", "5,3,8"}) {
    const SeedSet a = parse_seed_set("--seeds", text);
    const SeedSet b = parse_seed_set("--seeds", a.text());
    EXPECT_EQ(a.text(), text);
    EXPECT_EQ(b.is_range, a.is_range);
    ASSERT_EQ(b.size(), a.size());
    for (std::uint64_t i = 0; i < a.size() && i < 10; ++i) EXPECT_EQ(b.at(i), a.at(i));
  }
}

TEST(ParseSeedSet, RejectsEmptyAndBackwardRanges) {
  for (const std::string bad : {"5:5", "7:3"}) {
    SCOPED_TRACE(bad);
    expect_rejected("--seeds", bad, [&] { parse_seed_set("--seeds", bad); });
  }
  for (const std::string bad : {":5", "5:", "a:b", "-1:5", "1:2:3", "", "0,,1", "0,-1", "1.5"}) {
    SCOPED_TRACE("'" + bad + "'");
    const std::string msg = error_of([&] { parse_seed_set("--seeds", bad); });
    EXPECT_NE(msg, "<no error>") << "accepted '" << bad << "'";
    EXPECT_NE(msg.find("--seeds"), std::string::npos) << msg;
  }
}

// A repeated seed would count twice in a sweep's statistics: refused, naming it.
TEST(ParseSeedSet, RejectsRepeatedSeeds) {
  for (const std::string bad : {"0,0,1", "5,3,5", "18446744073709551615,1,18446744073709551615"}) {
    SCOPED_TRACE(bad);
    const std::string msg = error_of([&] { parse_seed_set("--seeds", bad); });
    EXPECT_NE(msg.find("--seeds: seed "), std::string::npos) << msg;
    EXPECT_NE(msg.find("given twice"), std::string::npos) << msg;
  }
  EXPECT_EQ(parse_seed_set("--seeds", "2,0,1").size(), 3u);  // distinct, any order
}

// ---- parse_shard -----------------------------------------------------------------------------

TEST(ParseShard, PartIOfN) {
  const ShardPart first = parse_shard("--shard", "0/3");
  EXPECT_EQ(first.index, 0u);
  EXPECT_EQ(first.count, 3u);
  const ShardPart last = parse_shard("--shard", "999999/1000000");
  EXPECT_EQ(last.index, 999999u);
  EXPECT_EQ(last.count, 1000000u);
  EXPECT_EQ(parse_shard("--shard", "0/1").count, 1u);
}

TEST(ParseShard, RejectsWhatIsNotAPartOfN) {
  EXPECT_EQ(error_of([] { parse_shard("--shard", "1"); }), "--shard 1: expected I/N, e.g. 0/3");
  for (const std::string bad : {"3/3", "0/0", "a/3", "-1/3", "0/1000001", "0/", "/3", "0/3/4"}) {
    SCOPED_TRACE(bad);
    const std::string msg = error_of([&] { parse_shard("--shard", bad); });
    // The whole text named, not one side of it.
    EXPECT_EQ(msg, "--shard " + bad +
                       ": expected I/N, N parts from 1 to 1000000 and the part I from 0 to N-1, "
                       "e.g. 0/3");
  }
}

// ---- parse_choice and parse_name_list --------------------------------------------------------

TEST(ParseChoice, ExactlyOneOfTheAllowed) {
  const std::vector<std::string> allowed = {"auto", "cpu", "cuda"};
  EXPECT_EQ(parse_choice("--device", "cpu", allowed), "cpu");
  EXPECT_EQ(parse_choice("--device", "cuda", allowed), "cuda");
  for (const std::string bad : {"nosuch", "", "CPU", "cpu ", "cpu,cuda"}) {
    SCOPED_TRACE("'" + bad + "'");
    expect_rejected("--device", bad, [&] { parse_choice("--device", bad, allowed); });
  }
  const std::string msg = error_of([&] { parse_choice("--device", "gpu", allowed); });
  for (const auto& a : allowed) EXPECT_NE(msg.find(a), std::string::npos) << msg;
}

TEST(ParseNameList, CommaListOfAllowedNames) {
  const std::vector<std::string> allowed = {"qk-identity", "all-identity", "all-random",
                                            "qk-random"};
  EXPECT_EQ(parse_name_list("--configs", "all-random,qk-random", allowed),
            (std::vector<std::string>{"all-random", "qk-random"}));
  EXPECT_EQ(parse_name_list("--configs", "qk-identity", allowed),
            (std::vector<std::string>{"qk-identity"}));
  for (const std::string bad :
       {"nosuch", "qk-random,nosuch", "", "qk-random,", ",qk-random", "qk-random,,all-random"}) {
    SCOPED_TRACE("'" + bad + "'");
    const std::string msg = error_of([&] { parse_name_list("--configs", bad, allowed); });
    EXPECT_NE(msg, "<no error>") << "accepted '" << bad << "'";
    EXPECT_NE(msg.find("--configs"), std::string::npos) << msg;
  }
  const std::string msg =
      error_of([&] { parse_name_list("--configs", "qk-random,nosuch", allowed); });
  EXPECT_NE(msg.find("nosuch"), std::string::npos) << msg;
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// A mistyped name says the nearest one; a name far from every choice says none.
TEST(Parse, MistypedNameSuggestsTheNearest) {
  const std::vector<std::string> tables = {"all", "dk-std", "knob", "training-sweep"};
  try {
    parse_name_list("--table", "dk_std", tables);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(did you mean dk-std?)"), std::string::npos) << e.what();
  }
  try {
    parse_choice("--format", "jsn", {"table", "csv", "json", "markdown"});
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(did you mean json?)"), std::string::npos) << e.what();
  }
  try {
    parse_name_list("--table", "zzzzzzzz", tables);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attn
