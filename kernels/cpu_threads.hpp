// cpu_threads.hpp: the CPU team's threads bound one to a CPU.
//
// Unbound, Linux often starts or wakes an OpenMP worker on the main thread's CPU and moves it
// only at a later load balance; until then the two threads share one CPU, each spinning at the
// joins in the other's time slice. So the backend binds the main thread where it runs (at once:
// it need not move) and each worker binds itself to its own CPU when it starts its first work:
// every parallel region's body begins with bind_this_thread(). A start-up region that
// bound the workers instead would make the main thread wait for them, the longer when another
// process has just run.
//
// Before that, the backend starts the team (start_team): a thread inherits its creator's CPU
// mask, and the main thread waits for new threads by spinning (libgomp: 300,000 spins) before
// it sleeps. A worker started on the main thread's CPU (always, once the main thread is bound;
// often unbound) could not run until then. So the team is started unbound, in a region of one
// thread more than the CPUs: libgomp spins only 100 times when the team outnumbers the CPUs.
#pragma once

#include <cstddef>
#include <vector>

namespace attn {

// The CPUs this process may run on (sched_getaffinity), in order; empty if unknown.
std::vector<int> allowed_cpus();

// Whether a team of `threads` threads is bound when the process may run on `allowed` CPUs: only
// when the team has one thread for every allowed CPU and at least two (with fewer threads than
// CPUs, other work may need the rest).
bool team_binds(int threads, std::size_t allowed);

// The binding for a team of `threads` threads when the process may run on `allowed` and its
// main thread runs on `current`: one CPU per thread, the main thread's first (it stays put),
// then the others in order; empty (no binding) unless team_binds.
std::vector<int> team_cpus(int threads, std::vector<int> allowed, int current);

// Starts OpenMP's threads for teams of up to `threads` (creating them costs the first parallel
// region milliseconds otherwise; see above) in one region of threads + 1 threads, the main
// thread unbound; the spare thread ends at the next region. Returns the threads that ran it.
int start_team(int threads);

// From now on, thread t of an OpenMP team binds itself to cpus[t] in its next
// bind_this_thread() (threads past the list's end keep their CPUs; an empty list binds none and
// unbinds none). Call it outside parallel regions, before the work: host/backend.cpp does, for
// the CPU backend.
void set_thread_cpus(std::vector<int> cpus);

// Binds the calling thread as the last set_thread_cpus said, once per list (later calls read an
// atomic and a thread-local counter); best effort: a thread the kernel refuses stays as it was.
// Called at the start of every parallel region's body (or of each of its loop's items) in
// kernels/, and by the main thread when the backend sets the list.
void bind_this_thread();

}  // namespace attn
