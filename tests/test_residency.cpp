// test_residency.cpp: the CUDA build's kernels as the device will hold them (label `cpu`: no GPU
// needed). Reads ptxas's report of this build (CMakeLists.txt: -Xptxas=-v captured by
// cmake/ptxas-report into build/<preset>/ptxas/), takes each kernel's registers, stack frame,
// spills and shared memory, computes the warps an sm_90 multiprocessor holds at once
// (residency.hpp) and checks them against the kernel's design: no spills beyond what a design
// accepts, no stack frame where
// the design keeps its state in registers, at least the resident warps it needs; and that each
// bulk call launches at least as many threads as the device holds at once.
#include <cxxabi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "head.hpp"
#include "host/backend.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
#include "residency.hpp"

namespace attn {
namespace {

struct Function {
  std::string file;  // the .cu file's report it came from
  bool entry = false;
  int registers = 0;
  long stack = 0, cumulative_stack = 0, spill_stores = 0, spill_loads = 0, shared = 0;
};

// "void attn::tiny::(anonymous namespace)::train_kernel<double>(...)" -> the qualified name
// without its parameters and anonymous namespaces: "attn::tiny::train_kernel<double>".
std::string demangled_name(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !d) return mangled;
  std::string s = d.get();
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  int depth = 0;  // cut at the parameter list: the first '(' outside template arguments
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0 && s.compare(i, 21, "(anonymous namespace)") != 0) {
      s.resize(i);
      break;
    }
  }
  for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;)
    s.erase(at, 23);
  return s;
}

// Every function of attnlab's namespace in the build's ptxas report, by demangled name.
std::map<std::string, Function> read_report(std::string& problems) {
  std::map<std::string, Function> out;
  // ATTNLAB_PTXAS_DIR: another build's report (the default is this build's).
  const char* other = std::getenv("ATTNLAB_PTXAS_DIR");
  const std::filesystem::path dir = other != nullptr ? other : ATTN_PTXAS_DIR;
  if (!std::filesystem::is_directory(dir)) {
    problems = "no ptxas report in " + dir.string();
    return out;
  }
  const std::regex entry(R"(Compiling entry function '([^']+)')");
  const std::regex props(R"(Function properties for (\S+))");
  const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers)");
  const std::regex smem(R"((\d+) bytes smem)");
  const std::regex cumulative(R"((\d+) bytes cumulative stack size)");
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() != ".ptxas") continue;
    std::ifstream in(file.path());
    std::string line, current, described;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, entry)) {
        current = m[1];
        out[current].entry = true;
        out[current].file = file.path().filename().string();
      } else if (std::regex_search(line, m, props)) {
        described = m[1];
        out[described].file = file.path().filename().string();
      } else if (std::regex_search(line, m, frame)) {
        Function& f = out[described];
        f.stack = std::stol(m[1]);
        f.spill_stores = std::stol(m[2]);
        f.spill_loads = std::stol(m[3]);
      } else if (std::regex_search(line, m, used)) {
        Function& f = out[current];
        f.registers = std::stoi(m[1]);
        if (std::regex_search(line, m, smem)) f.shared = std::stol(m[1]);
        if (std::regex_search(line, m, cumulative)) f.cumulative_stack = std::stol(m[1]);
      }
    }
  }
  std::map<std::string, Function> ours;
  for (const auto& [mangled, f] : out)
    if (mangled.rfind("_ZN4attn", 0) == 0) ours[demangled_name(mangled)] = f;
  if (ours.empty()) problems = "the ptxas report in " + dir.string() + " names no kernel of attn";
  return ours;
}

const std::map<std::string, Function>& report() {
  static std::string problems;
  static const std::map<std::string, Function> r = read_report(problems);
  if (!problems.empty()) ADD_FAILURE() << problems;
  return r;
}

TEST(Residency, TheReportCoversEveryKernelAndTheTableNoOther) {
  const auto& r = report();
  for (const auto& [name, f] : r) {
    if (f.entry) {
      EXPECT_NE(residency::design_of(name), nullptr)
          << "kernel " << name << " (" << f.file << ") has no design in tests/residency.hpp";
    }
  }
  for (const residency::Design& d : residency::designs()) {
    const auto it = r.find(d.kernel);
    EXPECT_TRUE(it != r.end() && it->second.entry)
        << "tests/residency.hpp names " << d.kernel << ", which the build's ptxas report lacks";
  }
}

// The table the report gives (printed, and in the test's XML output), then each kernel against
// its design.
TEST(Residency, EveryKernelMeetsItsDesign) {
  const auto& r = report();
  std::printf("%-42s %5s %5s %6s %6s %7s %6s  %s\n", "kernel", "regs", "stack", "spills", "smem",
              "threads", "warps", "(needs; limited by)");
  for (const residency::Design& d : residency::designs()) {
    const auto it = r.find(d.kernel);
    if (it == r.end()) continue;
    const Function& f = it->second;
    const residency::Resident res =
        residency::resident(d.threads, f.registers, f.shared + d.dynamic_shared);
    const long stack = std::max(f.stack, f.cumulative_stack);
    std::printf("%-42s %5d %5ld %6ld %6ld %7d %6d  (%d; %s)\n", d.kernel, f.registers, stack,
                f.spill_stores + f.spill_loads, f.shared + d.dynamic_shared, d.threads, res.warps,
                d.warps, res.limited_by);
    RecordProperty(std::string(d.kernel) + " registers", f.registers);
    RecordProperty(std::string(d.kernel) + " resident warps", res.warps);
    EXPECT_LE(f.spill_stores + f.spill_loads, d.spill_bytes)
        << d.kernel << ": " << f.spill_stores << " bytes spill stores, " << f.spill_loads
        << " bytes spill loads at " << f.registers << " registers; its design accepts "
        << d.spill_bytes;
    if (!d.stack) {
      EXPECT_EQ(stack, 0) << d.kernel << " keeps a " << stack
                          << "-byte stack frame; its design keeps its state in registers";
    }
    EXPECT_LE(f.registers, residency::Sm90::kMaxRegistersPerThread) << d.kernel;
    EXPECT_GE(res.blocks, 1) << d.kernel << ": a block of " << d.threads
                             << " threads does not fit a multiprocessor";
    EXPECT_GE(res.warps, d.warps) << d.kernel << ": " << res.warps
                                  << " resident warps per multiprocessor (" << f.registers
                                  << " registers, " << f.shared << " bytes of shared memory, "
                                  << "limited by " << res.limited_by << "), its design needs "
                                  << d.warps << ": " << d.why;
  }
  // Every function the kernels call: no spills either.
  for (const auto& [name, f] : r) {
    if (!f.entry) {
      EXPECT_EQ(f.spill_stores + f.spill_loads, 0) << "device function " << name << " spills";
    }
  }
}

// A bulk call launches at least as many threads as the device holds at once (resident threads,
// from the report), so that every multiprocessor is filled: dk-std's waves, the training sweep's
// calls and the numpy decoder's waves (one thread per piece).
TEST(Residency, BulkCallsLaunchAtLeastTheResidentThreads) {
  const auto& r = report();
  const auto resident_threads = [&r](const char* kernel) -> long long {
    const residency::Design* d = residency::design_of(kernel);
    const auto it = r.find(kernel);
    if (d == nullptr || it == r.end()) return -1;
    const residency::Resident res =
        residency::resident(d->threads, it->second.registers, it->second.shared);
    return 1LL * residency::Sm90::kMultiprocessors * res.warps * 32;
  };
  const long long dk_std = resident_threads("attn::dk_std::dk_std_chunks_kernel");
  ASSERT_GT(dk_std, 0);
  EXPECT_GE(1LL * dk_std::kChunksPerLaunch * dk_std::kLanes, dk_std);
  for (const char* k : {"attn::tiny::train_kernel<double>", "attn::tiny::train_kernel<float>"}) {
    const long long training = resident_threads(k);
    ASSERT_GT(training, 0) << k;
    EXPECT_GE(static_cast<long long>(Backend::kGpuSeedsPerCall), training) << k;
  }
  const long long numpy = resident_threads("attn::dk_std::numpy_pieces_kernel");
  ASSERT_GT(numpy, 0);
  const dk_std::StreamSplit split = dk_std::device_split(
      [](const numpy_rng::Pcg64&, dk_std::Piece*, std::size_t, int, double*) {});
  const long long pieces = static_cast<long long>(split.wave_normals / split.piece_words);
  EXPECT_GE(pieces, numpy) << "a wave of " << pieces << " pieces (one thread each) against "
                           << numpy << " resident threads";
  RecordProperty("numpy decoder waves of resident threads",
                 std::to_string(double(pieces) / double(numpy)));
}

// The warp kernel's design figure is the shared memory its launch asks for at the design's
// configuration (tests/test_simt.cpp checks that the launches ask for warp_shared_bytes).
TEST(Residency, TheHeadWarpDesignHasItsConfigurationsSharedMemory) {
  head::Model m;
  m.n = 8;
  m.d_model = m.d_k = m.d_v = 16;
  EXPECT_EQ(head::warp_shared_bytes(m), residency::kHeadWarpSharedBytes);
  const residency::Design* d = residency::design_of("attn::head::train_warp_kernel");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->dynamic_shared, residency::kHeadWarpSharedBytes);
}

// The occupancy rule itself, on figures the CUDA occupancy calculator gives for sm_90.
TEST(Residency, TheRuleGivesTheCalculatorsFigures) {
  // 255 registers, 128 threads: 8,192 registers a warp, 8 warps, 2 blocks of 4 warps.
  EXPECT_EQ(residency::resident(128, 255, 0).warps, 8);
  // 32 registers, 256 threads: 64 warps (the warp limit and the register file meet).
  EXPECT_EQ(residency::resident(256, 32, 0).warps, 64);
  // 90 registers round up to 96: 3,072 a warp, 21 warps by registers, 2 blocks of 8.
  EXPECT_EQ(residency::resident(256, 90, 0).warps, 16);
  // 12 KiB of shared memory and 1 KiB reserved a block: 17 blocks of 1 warp.
  EXPECT_EQ(residency::resident(32, 16, 12 * 1024).blocks, 17);
  // One warp a block: the 32-block limit.
  EXPECT_EQ(residency::resident(32, 16, 0).warps, 32);
  EXPECT_STREQ(residency::resident(32, 16, 0).limited_by, "the 32-block limit");
}

}  // namespace
}  // namespace attn
