// Where a reader's skip counts come from (MinibatchSource::skip_report): the error budgets of its
// deserializers and the invalid-sequence cleaner of its randomizer; and the check that those deserializers'
// inputs are still intact.
//
// Thread-safety: report() may run while a prefetch thread reads (the counters it reads are synchronized).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/minibatch_source.hpp"

namespace cntkio::pipeline {

struct SkipSources {
  std::vector<std::shared_ptr<Deserializer>> deserializers;  ///< as created (before bundling)
  std::shared_ptr<Deserializer> bundler;                     ///< the joined deserializer, if any
  std::function<size_t()> sequences_removed;                 ///< the randomizer's cleaner count; may be empty
  std::function<std::vector<std::string>()> sequences_removed_keys;  ///< its first keys; may be empty

  SkipReport report() const;
  /// Deserializer::check_inputs_intact of every deserializer: throws IoError when an input was cut.
  void check_inputs_intact() const;
  /// The same check as a function that holds the deserializers (for Packer::set_input_check).
  std::function<void()> input_check() const;
};

}  // namespace cntkio::pipeline
