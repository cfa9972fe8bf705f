// Run under `mpirun -np N`: every rank reads one randomized sweep of a generated CTF file with rank and
// size taken from the MPI environment; rank 0 gathers all keys and checks that each sequence came exactly
// once. The index cache is written by rank 0 alone and loaded by the others.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/distributed.hpp"
#include "cntkio/minibatch_source.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = 0;
  const size_t kSequences = 2000;
  try {
    cntkio::WorkerInfo worker = cntkio::worker_from_environment();
    if (worker.rank != static_cast<size_t>(rank) || worker.count != static_cast<size_t>(size)) {
      std::fprintf(stderr, "rank %d: environment says %zu of %zu\n", rank, worker.rank, worker.count);
      ++failures;
    }
    // One directory for the job, named after rank 0's process id.
    int job_id = static_cast<int>(::getpid());
    MPI_Bcast(&job_id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    fs::path dir = fs::temp_directory_path() / ("cntkio_mpi_" + std::to_string(job_id));
    std::string file = (dir / "data.ctf").string();
    if (rank == 0) {
      fs::create_directories(dir);
      std::ofstream out(file);
      for (size_t s = 0; s < kSequences; ++s) {
        for (size_t r = 0; r <= s % 4; ++r) out << s << " |x " << r << "\n";
      }
    }
    std::string config_text = "R = [ reader = [ readerType = CNTKTextFormatReader\n file = \"" + file +
                              "\"\n cacheIndex = true\n chunkSizeInBytes = 4096\n randomize = true\n "
                              "randomizationWindow = 4\n input = [ x = [ dim = 1 ; format = dense ] ] ] ]";
    cntkio::Config reader = cntkio::Config::from_text(config_text).get_block("R").get_block("reader");
    // Rank 0 indexes and writes the cache; the others start after it and must find the cache.
    std::unique_ptr<cntkio::MinibatchSource> source;
    if (rank == 0) source = cntkio::MinibatchSource::from_config(reader);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
      cntkio::CtfOptions options = cntkio::ctf_options_from_config(reader);
      if (!cntkio::ctf_index_summary(*cntkio::make_ctf_deserializer(options)).loaded_from_cache) {
        std::fprintf(stderr, "rank %d: the index cache written by rank 0 was not used\n", rank);
        ++failures;
      }
      source = cntkio::MinibatchSource::from_config(reader);
    }
    source->start_epoch(64, 0, cntkio::kFullSweep, worker.rank, worker.count);
    std::vector<long long> keys;
    cntkio::Minibatch mb;
    while (source->next_minibatch(mb)) {
      for (const auto& e : mb.streams[0].layout.entries) {
        if (!e.is_gap) keys.push_back(std::stoll(mb.keys[e.sequence_index]));
      }
    }
    int count = static_cast<int>(keys.size());
    std::vector<int> counts(static_cast<size_t>(size));
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> displacements(static_cast<size_t>(size), 0);
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displacements[static_cast<size_t>(r)] = total;
      total += counts[static_cast<size_t>(r)];
    }
    std::vector<long long> all(rank == 0 ? static_cast<size_t>(total) : 0);
    MPI_Gatherv(keys.data(), count, MPI_LONG_LONG, all.data(), counts.data(), displacements.data(),
                MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::map<long long, int> seen;
      for (long long k : all) ++seen[k];
      size_t wrong = 0;
      for (size_t s = 0; s < kSequences; ++s) {
        auto it = seen.find(static_cast<long long>(s));
        if (it == seen.end() || it->second != 1) ++wrong;
      }
      if (wrong != 0 || seen.size() != kSequences) {
        std::fprintf(stderr, "exact-once violated: %zu sequences missing or repeated, %zu distinct keys\n",
                     wrong, seen.size());
        ++failures;
      }
      std::printf("%d ranks read %d sequences; per rank:", size, total);
      for (int c : counts) std::printf(" %d", c);
      std::printf("\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) fs::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    ++failures;
  }
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi exact-once: %s\n", all_failures == 0 ? "passed" : "FAILED");
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
