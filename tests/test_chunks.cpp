// test_chunks.cpp (test_host): the chunk driver's calls in one process: chunks folded in order,
// and how many chunks each compute() call takes, paced by time (from the job's least, in whole
// multiples of it) or a fixed batch; states in an experiment's own form (ChunkJob::native) folded
// as they are, and written as text only where they leave the process.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "host/chunks.hpp"
#include "host/json.hpp"

namespace attn {
namespace {

struct Calls {
  std::vector<std::uint64_t> sizes, folded;
};

ChunkJob counting_job(Calls& calls, std::uint64_t chunks, std::uint64_t batch, bool paced) {
  ChunkJob j;
  j.label = "count";
  j.unit = "chunks";
  j.chunks = chunks;
  j.batch = batch;
  j.paced = paced;
  j.work = [](std::uint64_t) { return 1.0; };
  j.compute = [&calls](std::uint64_t first, std::uint64_t count) {
    calls.sizes.push_back(count);
    std::vector<ChunkState> states;
    for (std::uint64_t i = first; i < first + count; ++i) states.push_back(i);
    return states;
  };
  j.fold = [&calls](std::uint64_t i, const ChunkState& s) {
    EXPECT_EQ(s.get<std::uint64_t>(), i);
    calls.folded.push_back(i);
  };
  j.check = [](std::uint64_t, const ChunkState&) {};
  j.save = [] { return ChunkState(); };
  j.load = [](const ChunkState&, std::uint64_t) {};
  return j;
}

Options quiet_options() {
  Options o;
  o.quiet = true;
  return o;
}

TEST(ChunkDriver, UnpacedCallsTakeTheWholeBatch) {
  Calls calls;
  ASSERT_TRUE(run_chunks(quiet_options(), counting_job(calls, 12, 5, false)));
  EXPECT_EQ(calls.sizes, (std::vector<std::uint64_t>{5, 5, 2}));
  std::vector<std::uint64_t> order(12);
  for (std::uint64_t i = 0; i < 12; ++i) order[i] = i;
  EXPECT_EQ(calls.folded, order);
}

TEST(ChunkDriver, PacedCallsStartWithOneChunk) {
  Calls calls;
  ASSERT_TRUE(run_chunks(quiet_options(), counting_job(calls, 12, 5, true)));
  ASSERT_FALSE(calls.sizes.empty());
  EXPECT_EQ(calls.sizes[0], 1u);
  std::uint64_t total = 0;
  for (std::uint64_t s : calls.sizes) {
    EXPECT_LE(s, 5u);
    total += s;
  }
  EXPECT_EQ(total, 12u);
  EXPECT_EQ(calls.folded.size(), 12u);
}

// A least of 4: paced calls start at 4 chunks and take whole multiples of 4, but a last one
// that takes what remains; every chunk is folded once, in order.
TEST(ChunkDriver, PacedCallsTakeWholeMultiplesOfTheLeast) {
  Calls calls;
  ChunkJob j = counting_job(calls, 14, 12, true);
  j.least = 4;
  ASSERT_TRUE(run_chunks(quiet_options(), j));
  ASSERT_GE(calls.sizes.size(), 2u);
  EXPECT_EQ(calls.sizes[0], 4u);
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < calls.sizes.size(); ++k) {
    EXPECT_LE(calls.sizes[k], 12u);
    if (k + 1 < calls.sizes.size()) {
      EXPECT_EQ(calls.sizes[k] % 4, 0u) << k;
    }
    total += calls.sizes[k];
  }
  EXPECT_EQ(total, 14u);
  std::vector<std::uint64_t> order(14);
  for (std::uint64_t i = 0; i < 14; ++i) order[i] = i;
  EXPECT_EQ(calls.folded, order);
}

// A least above the batch is the batch; unpaced calls take the batch whatever the least.
TEST(ChunkDriver, TheLeastIsAtMostTheBatch) {
  for (bool paced : {true, false}) {
    Calls calls;
    ChunkJob j = counting_job(calls, 12, 5, paced);
    j.least = 8;
    ASSERT_TRUE(run_chunks(quiet_options(), j));
    EXPECT_EQ(calls.sizes, (std::vector<std::uint64_t>{5, 5, 2})) << paced;
  }
}

// A job whose states are kept in memory in its own form (a struct), with their text as JSON,
// counting what the driver asks of it.
struct NativeCalls {
  std::vector<std::uint64_t> folded_native, folded_text;
  int texts = 0, text_computes = 0;
};
struct Square {
  std::uint64_t chunk, square;
};

ChunkJob native_job(NativeCalls& calls, std::uint64_t chunks) {
  ChunkJob j;
  j.label = "squares";
  j.unit = "chunks";
  j.chunks = chunks;
  j.batch = 4;
  j.paced = false;
  j.work = [](std::uint64_t) { return 1.0; };
  j.compute = [&calls](std::uint64_t, std::uint64_t) {
    ++calls.text_computes;
    return std::vector<ChunkState>{};
  };
  j.native.compute = [](std::uint64_t first, std::uint64_t count) {
    std::vector<NativeState> states;
    for (std::uint64_t i = first; i < first + count; ++i) states.emplace_back(Square{i, i * i});
    return states;
  };
  j.native.text = [&calls](const NativeState& s) {
    ++calls.texts;
    const Square& q = std::any_cast<const Square&>(s);
    return ChunkState{{"chunk", q.chunk}, {"square", q.square}};
  };
  j.native.fold = [&calls](std::uint64_t i, const NativeState& s) {
    const Square& q = std::any_cast<const Square&>(s);
    EXPECT_EQ(q.chunk, i);
    EXPECT_EQ(q.square, i * i);
    calls.folded_native.push_back(i);
  };
  j.fold = [&calls](std::uint64_t i, const ChunkState& s) {
    EXPECT_EQ(s.at("chunk").get<std::uint64_t>(), i);
    EXPECT_EQ(s.at("square").get<std::uint64_t>(), i * i);
    calls.folded_text.push_back(i);
  };
  j.check = [](std::uint64_t, const ChunkState&) {};
  j.save = [] { return ChunkState(); };
  j.load = [](const ChunkState&, std::uint64_t) {};
  return j;
}

// In one process the states are folded in their own form, in order, and never made text.
TEST(ChunkDriver, NativeStatesAreFoldedAsTheyAre) {
  NativeCalls calls;
  ASSERT_TRUE(run_chunks(quiet_options(), native_job(calls, 10)));
  std::vector<std::uint64_t> order(10);
  for (std::uint64_t i = 0; i < 10; ++i) order[i] = i;
  EXPECT_EQ(calls.folded_native, order);
  EXPECT_TRUE(calls.folded_text.empty());
  EXPECT_EQ(calls.texts, 0);
  EXPECT_EQ(calls.text_computes, 0);
}

// A shard's states leave the process: its part holds their text, one per chunk of its range,
// and nothing is folded there.
TEST(ChunkDriver, NativeStatesLeaveAShardAsText) {
  test::TempDir dir;
  NativeCalls calls;
  Options o = quiet_options();
  o.shard = 1;
  o.shards = 2;
  o.out_dir = dir.path.string();
  o.experiments = {"squares"};
  EXPECT_FALSE(run_chunks(o, native_job(calls, 10)));
  EXPECT_TRUE(calls.folded_native.empty());
  EXPECT_TRUE(calls.folded_text.empty());
  EXPECT_EQ(calls.text_computes, 0);
  const nlohmann::json part =
      nlohmann::json::parse(test::read_file(dir.path / "squares.part.json"));
  const nlohmann::json& states = part.at("states");
  ASSERT_EQ(states.size(), 5u);
  EXPECT_EQ(calls.texts, 5);
  for (const nlohmann::json& e : states) {
    const auto i = e.at(0).get<std::uint64_t>();
    EXPECT_GE(i, 5u);
    EXPECT_EQ(e.at(1), (nlohmann::json{{"chunk", i}, {"square", i * i}}));
  }
}

}  // namespace
}  // namespace attn
