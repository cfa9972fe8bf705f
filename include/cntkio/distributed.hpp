/// @file
/// Which share of the data this process reads in a distributed job.
///
/// Started with `mpirun -np N`, each process learns its rank and the number of processes from the MPI
/// launcher's environment (OpenMPI's OMPI_COMM_WORLD_*, MPICH/Hydra's PMI_*); torch.distributed-style
/// RANK/WORLD_SIZE (and LOCAL_RANK) work too. Pass rank and count to MinibatchSource::start_epoch (v1) or
/// next_minibatch_v2 (v2). cntkio itself does not link MPI.
///
/// Thread-safety: reads the environment only.
#pragma once

#include <cstddef>
#include <string>

namespace cntkio {

/// This process's place in a distributed job, as the launcher's environment describes it.
struct WorkerInfo {
  size_t rank = 0;        ///< this process's rank in [0, count)
  size_t count = 1;       ///< number of processes
  size_t local_rank = 0;  ///< rank among the processes of this machine
  std::string source;     ///< which variables were used ("OpenMPI", "PMI", "torch", or "none")
};

/// Rank and count from the environment; a single process (0 of 1) when nothing is set. Throws UsageError if
/// the variables are inconsistent (rank not below count, non-numeric values).
WorkerInfo worker_from_environment();

}  // namespace cntkio
