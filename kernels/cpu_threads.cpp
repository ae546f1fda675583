// cpu_threads.cpp: see cpu_threads.hpp.
#include "cpu_threads.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <utility>

namespace attn {
namespace {

std::vector<int> g_cpus;           // written only outside parallel regions
std::atomic<unsigned> g_list{0};   // bumped by each set_thread_cpus
thread_local unsigned t_list = 0;  // the list this thread last bound by

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

bool team_binds(int threads, std::size_t allowed) {
  return threads >= 2 && static_cast<std::size_t>(threads) == allowed;
}

std::vector<int> team_cpus(int threads, std::vector<int> allowed, int current) {
  if (!team_binds(threads, allowed.size())) return {};
  const auto here = std::find(allowed.begin(), allowed.end(), current);
  if (here != allowed.end()) std::rotate(allowed.begin(), here, here + 1);
  return allowed;
}

int start_team(int threads) {
  // GOMP_SPINCOUNT (libgomp's manual): "If there are more OpenMP threads than available CPUs,
  // 1000 and 100 spins are used for OMP_WAIT_POLICY being ACTIVE or undefined".
  int ran = 0;
#pragma omp parallel num_threads(threads + 1)
  {
#pragma omp atomic
    ++ran;
  }
  return ran;
}

void set_thread_cpus(std::vector<int> cpus) {
  g_cpus = std::move(cpus);
  g_list.fetch_add(1, std::memory_order_release);
}

void bind_this_thread() {
  const unsigned list = g_list.load(std::memory_order_acquire);
  if (t_list == list) return;
  t_list = list;
  const auto t = static_cast<std::size_t>(omp_get_thread_num());
  if (t >= g_cpus.size()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(g_cpus[t], &one);
  sched_setaffinity(0, sizeof one, &one);
}

}  // namespace attn
