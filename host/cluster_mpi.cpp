// cluster_mpi.cpp: the MPI module (attnlab_mpi.so), see cluster_mpi.hpp. Built only with MPI,
// linked to libmpi (the C API) alone, and opened by cluster::init only when a launcher started
// the process, so that a job of one never loads MPI. No C++ library code here: the module needs
// no libstdc++ (demo links its own copy statically).
#include <mpi.h>

#include "host/cluster_mpi.hpp"

namespace {

static_assert(sizeof(MPI_Request) <= sizeof(attn_mpi_request::bytes));
static_assert(alignof(MPI_Request) <= 8);

MPI_Request* as_request(attn_mpi_request* r) { return reinterpret_cast<MPI_Request*>(r->bytes); }

void init(int* argc, char*** argv, int* rank, int* size, int* local_rank) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, local_rank);
  MPI_Comm_free(&node);
}

void finalize() { MPI_Finalize(); }

void abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int processor_name(char* name) {
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return len;
}

void gather(const char* mine, int n, char* all) {
  MPI_Gather(mine, n, MPI_CHAR, all, n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

void isend(const char* bytes, int n, int to, int tag, attn_mpi_request* request) {
  MPI_Isend(bytes, n, MPI_CHAR, to, tag, MPI_COMM_WORLD, as_request(request));
}

int test(attn_mpi_request* request) {
  int done = 0;
  MPI_Test(as_request(request), &done, MPI_STATUS_IGNORE);
  return done;
}

int probe(int tag, int* from, int* count) {
  int waiting = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &waiting, &st);
  if (!waiting) return 0;
  MPI_Get_count(&st, MPI_CHAR, count);
  *from = st.MPI_SOURCE;
  return 1;
}

void recv(char* bytes, int count, int from, int tag) {
  MPI_Recv(bytes, count, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void broadcast(char* bytes, int n) { MPI_Bcast(bytes, n, MPI_CHAR, 0, MPI_COMM_WORLD); }

const attn_mpi_api kApi = {ATTN_MPI_ABI_VERSION,
                           MPI_MAX_PROCESSOR_NAME,
                           init,
                           finalize,
                           abort,
                           processor_name,
                           gather,
                           isend,
                           test,
                           probe,
                           recv,
                           broadcast};

}  // namespace

extern "C" __attribute__((visibility("default"))) const attn_mpi_api* attn_mpi_api_get(void) {
  return &kApi;
}
