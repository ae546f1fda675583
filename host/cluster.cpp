// cluster.cpp: see cluster.hpp.
#include "host/cluster.hpp"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <thread>

#if defined(ATTNLAB_WITH_MPI)
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "host/cluster_mpi.hpp"
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

}  // namespace

bool launched_as_several() {
  const int n = launched_size();
  return n > 1 || n < 0;
}

int launched_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

namespace {

#if defined(ATTNLAB_WITH_MPI)
// The MPI module's table once init() has started MPI; null in a job of one.
const attn_mpi_api* g_mpi = nullptr;

struct Pending {
  attn_mpi_request request;
  std::string bytes;
};
std::deque<Pending> g_sends;

void reap_sends() {
  while (!g_sends.empty()) {
    if (!g_mpi->test(&g_sends.front().request)) return;
    g_sends.pop_front();
  }
}

// The folder of this executable (from /proc/self/exe), with a trailing '/'.
std::string executable_dir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    throw std::runtime_error("MPI: cannot read /proc/self/exe to find " ATTNLAB_MPI_MODULE);
  std::string dir(path, static_cast<std::size_t>(n));
  return dir.substr(0, dir.rfind('/') + 1);
}

// Opens the MPI module next to the executable (it is never unloaded).
const attn_mpi_api* load_module() {
  const std::string path = executable_dir() + ATTNLAB_MPI_MODULE;
  const auto fail = [](const std::string& why) {
    return std::runtime_error("MPI: " + why +
                              " (the MPI module is looked for next to the executable, where the "
                              "build puts it)");
  };
  // RTLD_GLOBAL: Open MPI's own plugins expect libmpi's symbols in the global scope.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) throw fail(dlerror());  // names the path
  const auto get = reinterpret_cast<attn_mpi_api_get_fn>(dlsym(handle, ATTN_MPI_API_SYMBOL));
  if (!get) throw fail(path + ": no " ATTN_MPI_API_SYMBOL);
  const attn_mpi_api* api = get();
  if (!api || api->abi_version != ATTN_MPI_ABI_VERSION)
    throw fail(path + ": another version of the module (rebuild)");
  return api;
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
  const attn_mpi_api* api = load_module();
  api->init(argc, argv, &g_rank, &g_size, &g_local);
  g_mpi = api;
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
  if (g_mpi) g_mpi->finalize();
  g_mpi = nullptr;
#endif
}

void abort(int code) {
#if defined(ATTNLAB_WITH_MPI)
  if (g_mpi && g_size > 1) g_mpi->abort(code);
#endif
  std::_Exit(code);
}

int rank() { return g_rank; }
int size() { return g_size; }
int local_rank() { return g_local; }
bool is_root() { return g_rank == 0; }

std::string describe_ranks() {
#if defined(ATTNLAB_WITH_MPI)
  if (g_mpi) {
    const auto width = static_cast<std::size_t>(g_mpi->max_processor_name);
    std::string mine(width, '\0');
    g_mpi->processor_name(mine.data());
    std::string all(width * static_cast<std::size_t>(g_size), '\0');
    g_mpi->gather(mine.data(), static_cast<int>(width), all.data());
    std::string s;
    for (int r = 0; r < g_size; ++r) {
      const char* name = all.data() + static_cast<std::size_t>(r) * width;
      s += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " on " +
           std::string(name, strnlen(name, width));
    }
    return std::to_string(g_size) + " MPI ranks: " + s;
  }
#endif
  return "1 process";
}

void send(int to, int tag, std::string bytes) {
#if defined(ATTNLAB_WITH_MPI)
  if (!g_mpi) throw std::logic_error("cluster::send before MPI started");
  g_sends.push_back(Pending{{}, std::move(bytes)});
  Pending& p = g_sends.back();
  g_mpi->isend(p.bytes.data(), static_cast<int>(p.bytes.size()), to, tag, &p.request);
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
  if (!g_mpi) return;
  for (reap_sends(); !g_sends.empty(); reap_sends()) {
    monitor.stop_point();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
#else
  (void)monitor;
#endif
}

bool poll(int tag, int& from, std::string& bytes) {
#if defined(ATTNLAB_WITH_MPI)
  if (!g_mpi) return false;
  int count = 0;
  if (!g_mpi->probe(tag, &from, &count)) return false;
  bytes.assign(static_cast<std::size_t>(count), '\0');
  g_mpi->recv(bytes.data(), count, from, tag);
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
  if (!g_mpi) return bytes_on_root;
  unsigned long long n = bytes_on_root.size();
  g_mpi->broadcast(reinterpret_cast<char*>(&n), static_cast<int>(sizeof n));
  std::string s = g_rank == 0 ? bytes_on_root : std::string(n, '\0');
  g_mpi->broadcast(s.data(), static_cast<int>(n));
  return s;
#else
  return bytes_on_root;
#endif
}

}  // namespace attn::cluster
