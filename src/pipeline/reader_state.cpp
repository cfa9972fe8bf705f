#include <algorithm>
#include <nlohmann/json.hpp>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"

namespace cntkio {

// CNTK's checkpoint key (ReaderConstants.h) holds the position, so CNTK-style states load too.
constexpr const char* kPositionKey = "minibatchSourcePosition";

std::string ReaderState::to_json() const {
  nlohmann::json j;
  j[kPositionKey] = position;
  if (sequence_counter_known) j["sequenceCounter"] = sequence_counter;
  j["numWorkers"] = num_workers;
  j["workerRank"] = worker_rank;
  if (!worker_positions.empty()) j["workerPositions"] = worker_positions;
  if (bptt) {
    nlohmann::json slots;
    slots["replayPosition"] = bptt->position;
    slots["replaySequenceCounter"] = bptt->sequence_counter;
    slots["pulls"] = nlohmann::json::array();
    for (const auto& [slot, queued] : bptt->pulls) slots["pulls"].push_back({slot, queued});
    slots["cursors"] = bptt->cursors;
    j["bpttSlots"] = slots;
  }
  if (transform_draws) j["transformDraws"] = *transform_draws;
  if (!worker_states.empty()) {
    j["workerStates"] = nlohmann::json::array();
    for (const ReaderState& w : worker_states)
      j["workerStates"].push_back(nlohmann::json::parse(w.to_json()));
  }
  return j.dump();
}

namespace {
// A count of a state: a JSON integer from 0 to 2^64-1 (nlohmann's get<uint64_t> would wrap -1 and truncate
// 5.5 or 1e30, restoring another position than the one written).
uint64_t count_of(const nlohmann::json& value, const char* key) {
  if (!value.is_number_unsigned()) {
    throw UsageError(std::string("Not a cntkio reader state: '") + key + "' is " + value.dump() +
                     ", not a whole number from 0 to 2^64-1");
  }
  return value.get<uint64_t>();
}
uint64_t count_or(const nlohmann::json& j, const char* key, uint64_t def) {
  return j.contains(key) ? count_of(j[key], key) : def;
}
}  // namespace

ReaderState ReaderState::from_json(const std::string& text) {
  ReaderState s;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || !j.contains(kPositionKey)) {
      throw UsageError(std::string("Not a cntkio reader state: it has no '") + kPositionKey + "' (" +
                       (text.size() > 200 ? text.substr(0, 200) + "..." : text) + ")");
    }
    s.position = count_of(j.at(kPositionKey), kPositionKey);
    s.sequence_counter = count_or(j, "sequenceCounter", 0);
    s.sequence_counter_known = j.contains("sequenceCounter");
    s.num_workers = count_or(j, "numWorkers", 1);
    s.worker_rank = count_or(j, "workerRank", 0);
    if (j.contains("workerPositions")) {
      for (const nlohmann::json& p : j["workerPositions"])
        s.worker_positions.push_back(count_of(p, "workerPositions"));
    }
    if (j.contains("bpttSlots")) {
      const nlohmann::json& slots = j["bpttSlots"];
      if (!slots.is_object()) throw UsageError("Not a cntkio reader state: 'bpttSlots' is " + slots.dump());
      ReaderState::BpttSlots bptt;
      bptt.position = slots.at("replayPosition").get<uint64_t>();
      bptt.sequence_counter = slots.at("replaySequenceCounter").get<uint64_t>();
      for (const nlohmann::json& pull : slots.at("pulls")) {
        if (!pull.is_array() || pull.size() != 2)
          throw UsageError("Not a cntkio reader state: bad bpttSlots pull");
        bptt.pulls.emplace_back(pull[0].get<uint64_t>(), pull[1].get<uint64_t>());
      }
      bptt.cursors = slots.at("cursors").get<std::vector<uint64_t>>();
      s.bptt = std::move(bptt);
    }
    if (j.contains("transformDraws")) {
      const nlohmann::json& draws = j["transformDraws"];
      if (!draws.is_array()) throw UsageError("Not a cntkio reader state: 'transformDraws' is not an array");
      std::vector<std::vector<uint64_t>> per_transform;
      for (const nlohmann::json& engines : draws) {
        if (!engines.is_array()) {
          throw UsageError("Not a cntkio reader state: 'transformDraws' holds " + engines.dump() +
                           ", not an array of counts");
        }
        std::vector<uint64_t> counts;
        for (const nlohmann::json& count : engines) counts.push_back(count_of(count, "transformDraws"));
        per_transform.push_back(std::move(counts));
      }
      s.transform_draws = std::move(per_transform);
    }
    if (j.contains("workerStates")) {
      if (!j["workerStates"].is_array())
        throw UsageError("Not a cntkio reader state: 'workerStates' is not an array");
      for (const nlohmann::json& w : j["workerStates"]) s.worker_states.push_back(from_json(w.dump()));
    }
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("Not a cntkio reader state: ") + e.what());
  }
  bool states_fit = s.worker_states.empty() || s.worker_states.size() == s.num_workers;
  for (size_t r = 0; r < s.worker_states.size() && states_fit; ++r) {
    const ReaderState& w = s.worker_states[r];
    states_fit = w.num_workers == s.num_workers && w.worker_rank == r && w.worker_states.empty() &&
                 w.worker_positions.empty();
  }
  if (s.num_workers == 0 || s.worker_rank >= s.num_workers || !states_fit ||
      (!s.worker_positions.empty() && s.worker_positions.size() != s.num_workers)) {
    throw UsageError("Inconsistent reader state: " + text);
  }
  return s;
}

const ReaderState& state_for_worker(const ReaderState& state, uint64_t num_workers, uint64_t worker_rank) {
  if (state.worker_states.size() == num_workers && worker_rank < num_workers) {
    return state.worker_states[worker_rank];
  }
  return state;
}

ReaderState merge_reader_states(const std::vector<ReaderState>& states) {
  if (states.empty()) throw UsageError("merge_reader_states needs the state of every worker, got none.");
  // A v2 worker learns its rank from its first read: until then its state is the initial one, and says
  // nothing but "nothing delivered". Such states stand for the ranks no other state names.
  auto is_initial = [](const ReaderState& s) {
    return s.num_workers == 1 && s.worker_rank == 0 && s.position == 0 && s.sequence_counter == 0 &&
           !s.bptt && s.worker_positions.empty();
  };
  std::vector<const ReaderState*> ranked;
  for (const ReaderState& s : states) {
    if (states.size() == 1 || !is_initial(s)) ranked.push_back(&s);
  }
  const uint64_t workers = ranked.empty() ? states.size() : ranked[0]->num_workers;
  if (states.size() != workers) {
    throw UsageError("merge_reader_states needs the states of all " + std::to_string(workers) +
                     " workers, got " + std::to_string(states.size()) + ".");
  }
  ReaderState merged;
  merged.num_workers = workers;
  merged.worker_positions.assign(workers, 0);
  std::vector<bool> seen(workers, false);
  const ReaderState* earliest = nullptr;
  for (const ReaderState* s : ranked) {
    if (s->num_workers != workers || s->worker_rank >= workers || seen[s->worker_rank]) {
      throw UsageError("merge_reader_states: the states do not come from one run (one per rank of " +
                       std::to_string(workers) + " workers).");
    }
    seen[s->worker_rank] = true;
    merged.worker_positions[s->worker_rank] = s->position;
    if (earliest == nullptr || s->position < earliest->position) earliest = s;
  }
  // Continue from the earliest worker; sequences the others delivered after it are skipped on restore. A
  // worker that has not read yet is the earliest: it continues from the start.
  if (earliest != nullptr && ranked.size() == states.size()) {
    merged.position = earliest->position;
    merged.sequence_counter = earliest->sequence_counter;
    merged.sequence_counter_known = earliest->sequence_counter_known;
    // Every worker had read: as many workers later continue exactly as from their own states.
    merged.worker_states.resize(workers);
    for (const ReaderState* s : ranked) merged.worker_states[s->worker_rank] = *s;
  }
  return merged;
}

}  // namespace cntkio
