// cluster.hpp: this process's place in an MPI job (rank, size, rank on its node), or a job of
// one. MPI lives here alone, under one build switch (ATTNLAB_WITH_MPI, CMake's FindMPI): the
// chunk driver (host/chunks.hpp) is the only user of the messages below.
//
// A process is in an MPI job when a launcher says so in its environment (Open MPI's mpirun:
// OMPI_COMM_WORLD_SIZE; PMIx, e.g. srun --mpi=pmix: PMIX_RANK; PMI-1/2: PMI_SIZE). Without that
// it is a job of one and MPI is never started (no start-up cost, no MPI needed at run time).
//
// No executable links libmpi: the MPI calls live in a module, attnlab_mpi.so
// (host/cluster_mpi.hpp), which init() opens with dlopen only when a launcher started the
// process. It is looked for in one place, the folder of the running executable
// (/proc/self/exe); CMake builds it into demo's folder (demo depends on it), so an executable
// elsewhere that calls init() under a launcher needs the module copied next to it. A job of
// one never opens it.
#pragma once

#include <string>

#include "monitor.hpp"

namespace attn::cluster {

// Whether this build can join an MPI job.
bool built_with_mpi();

// What the launcher's environment says, without starting MPI (for commands that run as one
// process): whether it started several processes, and this one's rank among them (0 when no
// launcher says so).
bool launched_as_several();
int launched_rank();

// Starts MPI when launched by mpirun/srun. Throws std::runtime_error when the launcher asks for
// more than one process but this build has no MPI (each process would run the whole job), or
// when the MPI module cannot be opened (the message names the path it tried).
void init(int* argc, char*** argv);
// Ends MPI after a clean run (every rank must call it); nothing in a job of one.
void finalize();
// Ends the whole job now with `code` (after an error or an interrupt on any rank): never a hang.
[[noreturn]] void abort(int code);

int rank();        // 0 .. size()-1; 0 in a job of one
int size();        // processes in the job; 1 without MPI
int local_rank();  // rank among the processes on this node (which GPU to use)
bool is_root();    // rank() == 0: the one process that prints, writes and shows progress
// "3 MPI ranks: rank 0 on node-a, rank 1 on node-a, ..." for provenance (a collective call);
// "1 process" in a job of one.
std::string describe_ranks();

// Messages between ranks, as bytes, once init() has started MPI. send() queues a message and
// returns at once; flush() waits until every queued message has left, checking `monitor` for a
// stop (throws Interrupted). poll() receives one waiting message with `tag` from any rank, if
// there is one (never in a job of one).
void send(int to, int tag, std::string bytes);
void flush(const Monitor& monitor);
bool poll(int tag, int& from, std::string& bytes);
// Root's bytes, on every rank (a collective call).
std::string broadcast(const std::string& bytes_on_root);

}  // namespace attn::cluster
