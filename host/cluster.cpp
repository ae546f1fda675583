// cluster.cpp: see cluster.hpp.
#include "host/cluster.hpp"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <thread>

#if defined(ATTNLAB_WITH_MPI)
#include <mpi.h>
#endif

namespace attn::cluster {
namespace {

// Processes the launcher started, from its environment: 0 when no launcher says so, -1 when
// one did (PMIx) without saying how many.
int launched_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  const bool pmi = std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
  if (pmi && std::getenv("SLURM_NTASKS")) return std::atoi(std::getenv("SLURM_NTASKS"));
  return pmi ? -1 : 0;
}

int g_rank = 0, g_size = 1, g_local = 0;
bool g_started = false;

#if defined(ATTNLAB_WITH_MPI)
struct Pending {
  MPI_Request request;
  std::string bytes;
};
std::deque<Pending> g_sends;

void reap_sends() {
  while (!g_sends.empty()) {
    int done = 0;
    MPI_Test(&g_sends.front().request, &done, MPI_STATUS_IGNORE);
    if (!done) return;
    g_sends.pop_front();
  }
}
#endif

}  // namespace

bool built_with_mpi() {
#if defined(ATTNLAB_WITH_MPI)
  return true;
#else
  return false;
#endif
}

void init(int* argc, char*** argv) {
  const int launched = launched_size();
  if (launched == 0 || launched == 1) return;
#if defined(ATTNLAB_WITH_MPI)
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_started = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &g_local);
  MPI_Comm_free(&node);
#else
  (void)argc;
  (void)argv;
  if (launched < 0) return;  // a launcher that did not say how many: run as one
  throw std::runtime_error(
      "this demo was built without MPI, but the launcher started " + std::to_string(launched) +
      " processes (each would run the whole job): install libopenmpi-dev and rebuild "
      "(cmake prints 'attnlab: MPI ON'), or use --shard I/N");
#endif
}

void finalize() {
#if defined(ATTNLAB_WITH_MPI)
  if (g_started) MPI_Finalize();
#endif
  g_started = false;
}

void abort(int code) {
#if defined(ATTNLAB_WITH_MPI)
  if (g_started && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

int rank() { return g_rank; }
int size() { return g_size; }
int local_rank() { return g_local; }
bool is_root() { return g_rank == 0; }

std::string describe_ranks() {
#if defined(ATTNLAB_WITH_MPI)
  if (g_started) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    std::string mine(name, static_cast<std::size_t>(len));
    mine.resize(MPI_MAX_PROCESSOR_NAME, '\0');
    std::string all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * g_size, '\0');
    MPI_Gather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    std::string s;
    for (int r = 0; r < g_size; ++r)
      s += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " on " +
           std::string(all.c_str() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    return std::to_string(g_size) + " MPI ranks: " + s;
  }
#endif
  return "1 process";
}

void send(int to, int tag, std::string bytes) {
#if defined(ATTNLAB_WITH_MPI)
  g_sends.push_back(Pending{MPI_REQUEST_NULL, std::move(bytes)});
  Pending& p = g_sends.back();
  MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD,
            &p.request);
  reap_sends();
#else
  (void)to;
  (void)tag;
  (void)bytes;
  throw std::logic_error("cluster::send without MPI");
#endif
}

void flush(const Monitor& monitor) {
#if defined(ATTNLAB_WITH_MPI)
  for (reap_sends(); !g_sends.empty(); reap_sends()) {
    monitor.checkpoint();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
#else
  (void)monitor;
#endif
}

bool poll(int tag, int& from, std::string& bytes) {
#if defined(ATTNLAB_WITH_MPI)
  int waiting = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &waiting, &st);
  if (!waiting) return false;
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  bytes.assign(static_cast<std::size_t>(count), '\0');
  from = st.MPI_SOURCE;
  MPI_Recv(bytes.data(), count, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return true;
#else
  (void)tag;
  (void)from;
  (void)bytes;
  return false;
#endif
}

std::string broadcast(const std::string& bytes_on_root) {
#if defined(ATTNLAB_WITH_MPI)
  if (!g_started) return bytes_on_root;
  unsigned long long n = bytes_on_root.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string s = g_rank == 0 ? bytes_on_root : std::string(n, '\0');
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return s;
#else
  return bytes_on_root;
#endif
}

}  // namespace attn::cluster
