// test_cpu_threads.cpp: the CPU team's binding (kernels/cpu_threads.hpp): which CPUs a team
// gets, that each thread ends on its own, once per list, and that the backend starts the team
// before it binds the main thread.
#include <dirent.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cpu_threads.hpp"
#include "host/backend.hpp"

namespace attn {
namespace {

TEST(CpuThreads, TeamGetsOneCpuPerThreadMainThreadsFirst) {
  EXPECT_EQ(team_cpus(4, {0, 1, 2, 3}, 2), (std::vector<int>{2, 0, 1, 3}));
  EXPECT_EQ(team_cpus(2, {4, 9}, 4), (std::vector<int>{4, 9}));
  EXPECT_EQ(team_cpus(3, {1, 5, 7}, 0), (std::vector<int>{1, 5, 7}));  // main's CPU not listed
}

TEST(CpuThreads, NoBindingUnlessEveryCpuHasAThread) {
  EXPECT_TRUE(team_cpus(1, {0}, 0).empty());           // one thread: nothing to place
  EXPECT_TRUE(team_cpus(2, {0, 1, 2, 3}, 0).empty());  // fewer threads than CPUs
  EXPECT_TRUE(team_cpus(4, {0, 1}, 0).empty());        // more threads than CPUs
  EXPECT_TRUE(team_cpus(2, {}, 0).empty());            // affinity unknown
  EXPECT_TRUE(team_binds(2, 2));
  EXPECT_FALSE(team_binds(1, 1));
  EXPECT_FALSE(team_binds(2, 4));
  EXPECT_FALSE(team_binds(4, 2));
}

// The CPUs thread t of a team of n is allowed after bind_this_thread(), t = 0 .. n-1.
std::vector<std::vector<int>> bound_team(int n) {
  std::vector<std::vector<int>> seen(static_cast<std::size_t>(n));
#pragma omp parallel num_threads(n)
  {
    bind_this_thread();
    seen[static_cast<std::size_t>(omp_get_thread_num())] = allowed_cpus();
  }
  return seen;
}

// Every thread of a team of n back to the CPUs in `mask`.
void restore(int n, const cpu_set_t& mask) {
#pragma omp parallel num_threads(n)
  sched_setaffinity(0, sizeof mask, &mask);
}

TEST(CpuThreads, EachThreadBindsToItsCpuOncePerList) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  // Two threads on the machine's last CPU and on its first (one CPU: both on it), in that
  // order, so that thread 0 has to move where the machine has two.
  const int n = 2;
  const std::vector<int> list = {cpus.back(), cpus.front()};
  if (omp_get_max_threads() < n) GTEST_SKIP() << "OpenMP gives fewer than 2 threads";
  set_thread_cpus(list);
  const auto seen = bound_team(n);
  restore(n, before);
  for (int t = 0; t < n; ++t)
    EXPECT_EQ(seen[static_cast<std::size_t>(t)], std::vector<int>{list[t]}) << "thread " << t;

  // Bound once per list: the restored threads stay as they are until a new list.
  const auto again = bound_team(n);
  for (int t = 0; t < n; ++t) EXPECT_EQ(again[static_cast<std::size_t>(t)], cpus);
  set_thread_cpus({cpus.front()});  // thread 1 is past the list's end: it keeps its CPUs
  const auto third = bound_team(n);
  restore(n, before);
  EXPECT_EQ(third[0], std::vector<int>{cpus.front()});
  EXPECT_EQ(third[1], cpus);
  set_thread_cpus({});
}

// The threads of this process (the entries of /proc/self/task).
int process_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// In a fresh process (OpenMP has no threads yet): the CPU backend as demo selects it, then a
// region of one thread per CPU. Exits 0 when the main thread is bound to one CPU, the worker,
// before its first bind_this_thread(), may run on every CPU (it was started unbound), and the
// start's spare thread has ended (the process has one thread per CPU); else 1.
[[noreturn]] void select_then_look_at_the_worker() {
  const std::vector<int> cpus = allowed_cpus();
  const int n = static_cast<int>(cpus.size());
  const Backend b = Backend::select("cpu", n);
  const std::vector<int> main_cpus = allowed_cpus();
  std::vector<int> worker_cpus;
#pragma omp parallel num_threads(n)
  if (omp_get_thread_num() == 1) worker_cpus = allowed_cpus();
  int threads = process_threads();
  for (int ms = 0; ms < 1000 && threads > n; ++ms) {  // the spare exits on its own after release
    usleep(1000);
    threads = process_threads();
  }
  std::fprintf(stderr, "main thread on %zu CPUs, worker on %zu of %d, %d threads\n",
               main_cpus.size(), worker_cpus.size(), n, threads);
  std::exit(main_cpus.size() == 1 && worker_cpus == cpus && threads == n ? 0 : 1);
}

TEST(CpuThreads, BackendStartsTheTeamBeforeBindingTheMainThread) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "one CPU: no team to bind";
  for (const char* v : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"})
    if (std::getenv(v) != nullptr) GTEST_SKIP() << v << " is set: the backend does not bind";
  // A worker created after the main thread's binding would inherit it (one CPU) and could not
  // run until the main thread stopped spinning at the region's start.
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-runs this binary: a fresh process
  EXPECT_EXIT(select_then_look_at_the_worker(), ::testing::ExitedWithCode(0), "");
}

TEST(CpuThreads, StartTeamRunsOneThreadMoreThanTheTeam) {
  if (omp_get_thread_limit() < 3) GTEST_SKIP() << "OpenMP's thread limit is below 3";
  EXPECT_EQ(start_team(2), 3);
}

}  // namespace
}  // namespace attn
