// cluster_mpi.hpp: the table of MPI calls that host/cluster.cpp opens at run time. The module
// (host/cluster_mpi.cpp, built as attnlab_mpi.so next to demo) is the only code that links
// libmpi; it wraps the MPI C calls one for one and keeps no state. Plain C types only cross
// this boundary: no C++ objects, no exceptions. Communicator: MPI_COMM_WORLD; root: rank 0.
#pragma once

extern "C" {

// Bumped whenever the table below changes; cluster.cpp refuses a module of another version.
#define ATTN_MPI_ABI_VERSION 1
// The module's one exported symbol: `const attn_mpi_api* attn_mpi_api_get(void)`.
#define ATTN_MPI_API_SYMBOL "attn_mpi_api_get"

// An MPI_Request, stored opaquely (the module checks that one fits).
typedef struct {
  alignas(8) unsigned char bytes[16];
} attn_mpi_request;

typedef struct {
  int abi_version;         // ATTN_MPI_ABI_VERSION
  int max_processor_name;  // MPI_MAX_PROCESSOR_NAME
  // MPI_Init_thread (funneled), then this process's rank, the job's size and the rank among the
  // processes on this node.
  void (*init)(int* argc, char*** argv, int* rank, int* size, int* local_rank);
  void (*finalize)(void);
  void (*abort)(int code);
  // This node's name into name[0 .. max_processor_name); returns its length.
  int (*processor_name)(char* name);
  // Every rank's `n` bytes into `all` (n * size bytes) on the root.
  void (*gather)(const char* mine, int n, char* all);
  // Starts sending n bytes (which must stay alive until test() says done) to rank `to`.
  void (*isend)(const char* bytes, int n, int to, int tag, attn_mpi_request* request);
  // 1 when the send has completed (the request is then spent), else 0.
  int (*test)(attn_mpi_request* request);
  // 1 when a message with `tag` waits (its sender and length in bytes), else 0.
  int (*probe)(int tag, int* from, int* count);
  void (*recv)(char* bytes, int count, int from, int tag);
  // The root's n bytes, on every rank.
  void (*broadcast)(char* bytes, int n);
} attn_mpi_api;

typedef const attn_mpi_api* (*attn_mpi_api_get_fn)(void);

}  // extern "C"
