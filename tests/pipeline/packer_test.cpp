// Packers (spec pipeline.md §5.3, §7) and the minibatch layout, driven by a scripted SequenceEnumerator.
#include "pipeline/packer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch.hpp"
#include "pipeline/packer_common.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {
namespace {

constexpr size_t kGap = std::numeric_limits<size_t>::max();
constexpr size_t kMax = std::numeric_limits<size_t>::max();

StreamInfo make_stream(std::string name, size_t dim, StorageFormat storage = StorageFormat::kDense,
                       ElementType type = ElementType::kFloat) {
  StreamInfo s;
  s.name = std::move(name);
  s.alias = s.name;
  s.storage = storage;
  s.element_type = type;
  s.sample_shape = {dim};
  return s;
}

Layout::Entry seq(size_t i, size_t s, ptrdiff_t begin, ptrdiff_t end) {
  return {i, s, begin, end, false};
}
Layout::Entry gap(size_t s, ptrdiff_t begin, ptrdiff_t end) {
  return {kGap, s, begin, end, true};
}

Layout layout_of(size_t parallel, size_t steps, std::vector<Layout::Entry> entries) {
  Layout l;
  l.num_parallel = parallel;
  l.num_time_steps = steps;
  l.entries = std::move(entries);
  return l;
}

void expect_entries(const Layout& actual, const std::vector<Layout::Entry>& expected) {
  ASSERT_EQ(actual.entries.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE("entry " + std::to_string(k));
    EXPECT_EQ(actual.entries[k].is_gap, expected[k].is_gap);
    EXPECT_EQ(actual.entries[k].sequence_index, expected[k].sequence_index);
    EXPECT_EQ(actual.entries[k].row, expected[k].row);
    EXPECT_EQ(actual.entries[k].t_begin, expected[k].t_begin);
    EXPECT_EQ(actual.entries[k].t_end, expected[k].t_end);
  }
}

template <typename T>
std::vector<T> values_of(const StreamBatch& b) {
  std::vector<T> out(b.values.size() / sizeof(T));
  std::memcpy(out.data(), b.values.data(), out.size() * sizeof(T));
  return out;
}

// A SequenceEnumerator that returns scripted results, one per call, then end-of-epoch with no data.
class ScriptedEnumerator : public SequenceEnumerator {
 public:
  explicit ScriptedEnumerator(std::vector<StreamInfo> streams) : streams_(std::move(streams)) {}

  template <typename T>
  SequenceData dense(std::vector<T> values, size_t dim) {
    auto owned = keep(std::move(values));
    SequenceData d;
    d.number_of_samples = static_cast<uint32_t>(owned->size() / dim);
    d.values = owned->data();
    return d;
  }

  // samples[t] = (index, value) pairs of sample t, in stored order.
  template <typename T>
  SequenceData sparse(const std::vector<std::vector<std::pair<int32_t, T>>>& samples) {
    std::vector<T> values;
    std::vector<int32_t> indices;
    std::vector<uint32_t> counts;
    for (const auto& sample : samples) {
      counts.push_back(static_cast<uint32_t>(sample.size()));
      for (const auto& [index, value] : sample) {
        indices.push_back(index);
        values.push_back(value);
      }
    }
    SequenceData d;
    d.number_of_samples = static_cast<uint32_t>(samples.size());
    d.total_nnz = values.size();
    d.values = keep(std::move(values))->data();
    d.indices = keep(std::move(indices))->data();
    d.nnz_counts = keep(std::move(counts))->data();
    return d;
  }

  /// One result: sequences[j][i] = stream i of sequence j.
  void add_call(std::vector<std::vector<SequenceData>> sequences, std::vector<uint64_t> keys,
                bool end_of_sweep = false, bool end_of_epoch = false) {
    calls_.push_back({std::move(sequences), std::move(keys), end_of_sweep, end_of_epoch});
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  void start_epoch(const EpochConfiguration&) override {}
  void set_configuration(const EpochConfiguration&) override {}
  Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) override {
    requests.emplace_back(global_sample_count, local_sample_count);
    Sequences out;
    if (next_ == calls_.size()) {
      out.end_of_epoch = true;
      return out;
    }
    const Call& call = calls_[next_++];
    out.data.resize(streams_.size());
    for (size_t j = 0; j < call.sequences.size(); ++j) {
      for (size_t i = 0; i < streams_.size(); ++i) out.data[i].push_back(call.sequences[j][i]);
      out.keys.push_back({call.keys[j], 0});
    }
    out.end_of_sweep = call.end_of_sweep;
    out.end_of_epoch = call.end_of_epoch;
    return out;
  }
  size_t current_sample_position() const override { return 0; }
  void set_current_sample_position(size_t) override {}
  void skip_delivered(const DeliveredBefore&) override {}
  std::string key_to_string(const SequenceKey& key) const override {
    return "seq" + std::to_string(key.sequence);
  }

  std::vector<std::pair<size_t, size_t>> requests;  // (global, local) budget of each call

 private:
  struct Call {
    std::vector<std::vector<SequenceData>> sequences;
    std::vector<uint64_t> keys;
    bool end_of_sweep;
    bool end_of_epoch;
  };
  template <typename T>
  std::shared_ptr<std::vector<T>> keep(std::vector<T> v) {
    auto owned = std::make_shared<std::vector<T>>(std::move(v));
    storage_.push_back(owned);
    return owned;
  }

  std::vector<StreamInfo> streams_;
  std::vector<Call> calls_;
  size_t next_ = 0;
  std::vector<std::shared_ptr<void>> storage_;
};

EpochConfiguration config_of(size_t minibatch_size, size_t workers = 1, size_t rank = 0) {
  EpochConfiguration c;
  c.minibatch_size_in_samples = minibatch_size;
  c.num_workers = workers;
  c.worker_rank = rank;
  return c;
}

// Two sequence packers over two enumerators that `script` gives the same calls, configured alike: for
// comparing a packer used one way with one used another.
template <typename Script>
std::pair<std::unique_ptr<Packer>, std::unique_ptr<Packer>> twin_packers(
    const std::vector<StreamInfo>& streams, Script script, size_t minibatch_size) {
  auto first_source = std::make_shared<ScriptedEnumerator>(streams);
  auto second_source = std::make_shared<ScriptedEnumerator>(streams);
  script(*first_source);
  script(*second_source);
  std::pair<std::unique_ptr<Packer>, std::unique_ptr<Packer>> packers{
      make_sequence_packer(first_source, false), make_sequence_packer(second_source, false)};
  packers.first->set_configuration(config_of(minibatch_size));
  packers.second->set_configuration(config_of(minibatch_size));
  return packers;
}

// ------------------------------------------------------------------------------------------------ layouts

TEST(PackedLayout, PlacesSpecExampleFirstFit) {
  // §7.2: lengths 5,3,2,4,1 -> width 5; s0 = [seq0], s1 = [seq1@0, seq2@3], s2 = [seq3@0, seq4@4].
  const Layout l = make_packed_layout({5, 3, 2, 4, 1});
  EXPECT_EQ(l.num_parallel, 3u);
  EXPECT_EQ(l.num_time_steps, 5u);
  EXPECT_EQ(l.num_columns(), 15u);
  expect_entries(l, {seq(0, 0, 0, 5), seq(1, 1, 0, 3), seq(2, 1, 3, 5), seq(3, 2, 0, 4), seq(4, 2, 4, 5)});
}

TEST(PackedLayout, ThreeSequencesOfTwoSamplesMakeThreeRowsOfTwoSteps) {
  const Layout l = make_packed_layout({2, 2, 2});
  EXPECT_EQ(l.num_parallel, 3u);
  EXPECT_EQ(l.num_time_steps, 2u);
  expect_entries(l, {seq(0, 0, 0, 2), seq(1, 1, 0, 2), seq(2, 2, 0, 2)});
}

TEST(PackedLayout, GapsFollowTheSequencesOnePerRowThatIsNotFull) {
  const Layout l = make_packed_layout({4, 2, 1, 4, 3});
  // s0 = [seq0], s1 = [seq1@0, seq2@2] (3 of 4 used), s2 = [seq3], s3 = [seq4] (3 of 4 used).
  EXPECT_EQ(l.num_parallel, 4u);
  EXPECT_EQ(l.num_time_steps, 4u);
  expect_entries(l, {seq(0, 0, 0, 4), seq(1, 1, 0, 2), seq(2, 1, 2, 3), seq(3, 2, 0, 4), seq(4, 3, 0, 3),
                     gap(1, 3, 4), gap(3, 3, 4)});
}

TEST(PackedLayout, RejectsZeroLengthAndAcceptsNoSequences) {
  EXPECT_THROW(make_packed_layout({2, 0}), UsageError);
  const Layout empty = make_packed_layout({});
  EXPECT_EQ(empty.num_columns(), 0u);
  EXPECT_TRUE(empty.entries.empty());
}

TEST(FrameLayout, IsNRowsByOneStep) {
  const Layout l = make_frame_layout(3);
  EXPECT_EQ(l.num_parallel, 3u);
  EXPECT_EQ(l.num_time_steps, 1u);
  expect_entries(l, {seq(0, 0, 0, 1), seq(1, 1, 0, 1), seq(2, 2, 0, 1)});
}

TEST(LayoutQueries, GapsSequencesAndSamples) {
  const Layout l = make_packed_layout({4, 2, 1});  // s0 = [seq0], s1 = [seq1@0, seq2@2], gap (1, 3, 4)
  EXPECT_TRUE(l.is_gap(1, 3));
  EXPECT_FALSE(l.is_gap(1, 2));
  EXPECT_FALSE(l.is_gap(0, 3));
  EXPECT_FALSE(l.is_gap(1, 0));
  EXPECT_EQ(l.num_sequences(), 3u);
  EXPECT_EQ(l.num_samples(), 7u);

  // Sequences that started before or end after the minibatch count only their frames inside it.
  const Layout bptt = layout_of(2, 3, {seq(0, 0, -3, 2), seq(1, 1, -1, 5), gap(0, 2, 3)});
  EXPECT_EQ(bptt.num_sequences(), 2u);
  EXPECT_EQ(bptt.num_samples(), 5u);
  EXPECT_TRUE(bptt.is_gap(0, 2));
  EXPECT_FALSE(bptt.is_gap(1, 2));
}

TEST(LayoutQueries, EqualityComparesShapeAndEntriesButNotGapIndices) {
  const Layout a = layout_of(2, 2, {seq(0, 0, 0, 2), seq(1, 1, 0, 1), gap(1, 1, 2)});
  Layout b = a;
  EXPECT_TRUE(a == b);
  b.entries[2].sequence_index = 7;  // meaningless for a gap
  EXPECT_TRUE(a == b);
  b.entries[1].sequence_index = 2;
  EXPECT_FALSE(a == b);
  b = a;
  b.entries[1].t_end = 2;
  EXPECT_FALSE(a == b);
  b = a;
  b.num_parallel = 3;
  EXPECT_FALSE(a == b);
  b = a;
  b.entries.pop_back();
  EXPECT_FALSE(a == b);
}

// ------------------------------------------------------------------------------------------------ value_at

TEST(StreamBatchValueAt, ReadsDenseFloatAndDouble) {
  StreamBatch f;
  f.info = make_stream("f", 2);
  f.layout = make_frame_layout(2);
  const float fv[] = {1.5f, 2.5f, 3.5f, 4.5f};
  f.values.resize(sizeof(fv));
  std::memcpy(f.values.data(), fv, sizeof(fv));
  EXPECT_EQ(f.value_at(0, 0), 1.5);
  EXPECT_EQ(f.value_at(1, 0), 2.5);
  EXPECT_EQ(f.value_at(1, 1), 4.5);

  StreamBatch d;
  d.info = make_stream("d", 1, StorageFormat::kDense, ElementType::kDouble);
  d.layout = make_frame_layout(2);
  const double dv[] = {0.1, -7.25};
  d.values.resize(sizeof(dv));
  std::memcpy(d.values.data(), dv, sizeof(dv));
  EXPECT_EQ(d.value_at(0, 0), 0.1);
  EXPECT_EQ(d.value_at(0, 1), -7.25);
  EXPECT_THROW(d.value_at(1, 0), UsageError);
  EXPECT_THROW(d.value_at(0, 2), UsageError);
}

TEST(StreamBatchValueAt, ReadsSparseWithLastDuplicateWinning) {
  StreamBatch b;
  b.info = make_stream("s", 5, StorageFormat::kSparseCsc, ElementType::kDouble);
  b.layout = make_frame_layout(2);
  const double v[] = {1, 2, 3, 5};
  b.values.resize(sizeof(v));
  std::memcpy(b.values.data(), v, sizeof(v));
  b.row_indices = {4, 0, 4, 2};
  b.col_starts = {0, 3, 4};
  EXPECT_EQ(b.nnz(), 4u);
  EXPECT_EQ(b.value_at(4, 0), 3.0);
  EXPECT_EQ(b.value_at(0, 0), 2.0);
  EXPECT_EQ(b.value_at(1, 0), 0.0);
  EXPECT_EQ(b.value_at(2, 1), 5.0);
  EXPECT_EQ(b.value_at(4, 1), 0.0);
}

// ------------------------------------------------------------------------------------------------ sequence
// packer

TEST(SequencePacker, DenseColumnsAreTimeMajorAndGapColumnsZero) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 2)});
  // First minibatch fills every column; the second has gaps where the first had data.
  source->add_call({{source->dense<float>({9, 9, 9, 9}, 2)}, {source->dense<float>({9, 9, 9, 9}, 2)}},
                   {1, 2});
  source->add_call({{source->dense<float>({1, 2, 3, 4, 5, 6}, 2)}, {source->dense<float>({7, 8}, 2)}},
                   {10, 11},
                   /*end_of_sweep=*/true, /*end_of_epoch=*/false);
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(4));

  const Minibatch first = packer->read_minibatch();
  EXPECT_EQ(values_of<float>(first.streams[0]), (std::vector<float>{9, 9, 9, 9, 9, 9, 9, 9}));

  const Minibatch mb = packer->read_minibatch();
  EXPECT_TRUE(mb.end_of_sweep);
  EXPECT_FALSE(mb.end_of_epoch);
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"seq10", "seq11"}));
  ASSERT_EQ(mb.streams.size(), 1u);
  const StreamBatch& b = mb.streams[0];
  EXPECT_EQ(b.info.name, "features");
  EXPECT_EQ(b.layout.num_parallel, 2u);
  EXPECT_EQ(b.layout.num_time_steps, 3u);
  expect_entries(b.layout, {seq(0, 0, 0, 3), seq(1, 1, 0, 1), gap(1, 1, 3)});
  // Column of sample t of the sequence at (s, tBegin) = (tBegin + t) * 2 + s: seq0 -> 0, 2, 4; seq1 -> 1.
  EXPECT_EQ(values_of<float>(b), (std::vector<float>{1, 2, 7, 8, 3, 4, 0, 0, 5, 6, 0, 0}));
  EXPECT_EQ(b.value_at(1, 4), 6.0);
  EXPECT_TRUE(b.row_indices.empty());
  EXPECT_TRUE(b.col_starts.empty());
  EXPECT_EQ(source->requests, (std::vector<std::pair<size_t, size_t>>{{4, 4}, {4, 4}}));
}

// A minibatch handed back is written over in place: gap columns where it held data are zeroed, a stream's
// sparse arrays are refilled, and keys replaced; the result equals packing into fresh buffers.
TEST(SequencePacker, RecycledBuffersGiveTheSameMinibatches) {
  auto script = [](ScriptedEnumerator& source) {
    for (int round = 0; round < 3; ++round) {
      source.add_call(
          {{source.dense<float>({9, 9, 9, 9, 9, 9}, 2), source.sparse<float>({{{1, 9.f}}, {}, {{2, 9.f}}})},
           {source.dense<float>({9, 9, 9, 9, 9, 9}, 2),
            source.sparse<float>({{{0, 9.f}, {3, 9.f}}, {}, {}})}},
          {1, 2});
      source.add_call(
          {{source.dense<float>({1, 2, 3, 4, 5, 6}, 2), source.sparse<float>({{{4, 1.f}}, {}, {}})},
           {source.dense<float>({7, 8}, 2), source.sparse<float>({{{2, 5.f}}})}},
          {10, 11});
    }
  };
  auto [fresh, reused] =
      twin_packers({make_stream("f", 2), make_stream("w", 5, StorageFormat::kSparseCsc)}, script, 6);
  for (int k = 0; k < 6; ++k) {
    SCOPED_TRACE("minibatch " + std::to_string(k));
    const Minibatch expected = fresh->read_minibatch();
    Minibatch got = reused->read_minibatch();
    EXPECT_EQ(got.keys, expected.keys);
    ASSERT_EQ(got.streams.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(got.streams[i].layout, expected.streams[i].layout);
      EXPECT_EQ(got.streams[i].values, expected.streams[i].values);
      EXPECT_EQ(got.streams[i].row_indices, expected.streams[i].row_indices);
      EXPECT_EQ(got.streams[i].col_starts, expected.streams[i].col_starts);
    }
    if (k % 2 == 1) {
      EXPECT_EQ(values_of<float>(got.streams[0]), (std::vector<float>{1, 2, 7, 8, 3, 4, 0, 0, 5, 6, 0, 0}));
    }
    reused->recycle(std::move(got));
  }
}

// Writing each value once needs entries that cover every column; a layout that leaves columns uncovered
// gets them zeroed, whatever the buffer held.
TEST(PackDense, ColumnsNoEntryCoversAreZeroEvenInAReusedBuffer) {
  const StreamInfo stream = make_stream("f", 1);
  std::vector<float> a{1, 2};
  SequenceData d;
  d.number_of_samples = 2;
  d.values = a.data();
  std::vector<unsigned char> buffer(4 * sizeof(float), 0xFF);
  packer_detail::pack_dense(stream, layout_of(2, 2, {seq(0, 0, 0, 2)}), {d}, buffer);  // row 1 uncovered
  std::vector<float> got(4);
  std::memcpy(got.data(), buffer.data(), sizeof(float) * 4);
  EXPECT_EQ(got, (std::vector<float>{1, 0, 2, 0}));
  std::fill(buffer.begin(), buffer.end(), 0xFF);
  packer_detail::pack_dense(stream, layout_of(2, 2, {seq(0, 0, 0, 2), gap(1, 0, 2)}), {d}, buffer);
  std::memcpy(got.data(), buffer.data(), sizeof(float) * 4);
  EXPECT_EQ(got, (std::vector<float>{1, 0, 2, 0}));
}

TEST(SequencePacker, DenseDoubleKeepsElementType) {
  auto source = std::make_shared<ScriptedEnumerator>(
      std::vector{make_stream("x", 1, StorageFormat::kDense, ElementType::kDouble)});
  source->add_call({{source->dense<double>({0.125, 0.25}, 1)}, {source->dense<double>({-1.0 / 3}, 1)}},
                   {0, 1}, false, true);
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(3));
  const Minibatch mb = packer->read_minibatch();
  EXPECT_TRUE(mb.end_of_epoch);
  const StreamBatch& b = mb.streams[0];
  EXPECT_EQ(b.info.element_type, ElementType::kDouble);
  EXPECT_EQ(values_of<double>(b), (std::vector<double>{0.125, -1.0 / 3, 0.25, 0}));
  EXPECT_EQ(b.value_at(0, 1), -1.0 / 3);
}

TEST(SequencePacker, EachStreamGetsItsOwnLayout) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 1), make_stream("labels", 1)});
  source->add_call({{source->dense<float>({1, 2, 3}, 1), source->dense<float>({10}, 1)},
                    {source->dense<float>({4}, 1), source->dense<float>({20}, 1)}},
                   {0, 1});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(4));
  const Minibatch mb = packer->read_minibatch();
  ASSERT_EQ(mb.streams.size(), 2u);
  expect_entries(mb.streams[0].layout, {seq(0, 0, 0, 3), seq(1, 1, 0, 1), gap(1, 1, 3)});
  EXPECT_EQ(values_of<float>(mb.streams[0]), (std::vector<float>{1, 4, 2, 0, 3, 0}));
  EXPECT_EQ(mb.streams[1].layout.num_parallel, 2u);
  EXPECT_EQ(mb.streams[1].layout.num_time_steps, 1u);
  expect_entries(mb.streams[1].layout, {seq(0, 0, 0, 1), seq(1, 1, 0, 1)});
  EXPECT_EQ(values_of<float>(mb.streams[1]), (std::vector<float>{10, 20}));
  EXPECT_FALSE(mb.streams[0].layout == mb.streams[1].layout);
}

TEST(SequencePacker, SparseIsCscInTimeMajorColumnOrderWithStoredEntryOrder) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{
      make_stream("words", 5, StorageFormat::kSparseCsc), make_stream("w2", 5, StorageFormat::kSparseCsc)});
  // seq0: two samples, the first unsorted with a duplicate index; seq1: one sample. Layout 2 x 2, gap (1, 1,
  // 2).
  auto s0 = source->sparse<float>({{{4, 1.f}, {0, 2.f}, {4, 3.f}}, {{1, 6.f}}});
  auto s1 = source->sparse<float>({{{2, 5.f}}});
  // Second stream: seq0 has an empty first sample.
  auto t0 = source->sparse<float>({{}, {{3, 8.f}}});
  auto t1 = source->sparse<float>({{{0, 9.f}, {1, 10.f}}});
  source->add_call({{s0, t0}, {s1, t1}}, {3, 4});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(3));
  const Minibatch mb = packer->read_minibatch();

  const StreamBatch& b = mb.streams[0];
  expect_entries(b.layout, {seq(0, 0, 0, 2), seq(1, 1, 0, 1), gap(1, 1, 2)});
  // Columns: 0 = (t0, s0) seq0[0]; 1 = (t0, s1) seq1[0]; 2 = (t1, s0) seq0[1]; 3 = gap.
  EXPECT_EQ(b.col_starts, (std::vector<int32_t>{0, 3, 4, 5, 5}));
  EXPECT_EQ(b.row_indices, (std::vector<int32_t>{4, 0, 4, 2, 1}));
  EXPECT_EQ(values_of<float>(b), (std::vector<float>{1, 2, 3, 5, 6}));
  EXPECT_EQ(b.nnz(), 5u);
  EXPECT_EQ(b.value_at(4, 0), 3.0);
  EXPECT_EQ(b.value_at(0, 0), 2.0);
  EXPECT_EQ(b.value_at(2, 1), 5.0);
  EXPECT_EQ(b.value_at(1, 2), 6.0);
  EXPECT_EQ(b.value_at(1, 3), 0.0);

  const StreamBatch& c = mb.streams[1];
  EXPECT_EQ(c.col_starts, (std::vector<int32_t>{0, 0, 2, 3, 3}));
  EXPECT_EQ(c.row_indices, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(values_of<float>(c), (std::vector<float>{9, 10, 8}));
}

TEST(SequencePacker, SparseDoubleValues) {
  auto source = std::make_shared<ScriptedEnumerator>(
      std::vector{make_stream("s", 3, StorageFormat::kSparseCsc, ElementType::kDouble)});
  source->add_call({{source->sparse<double>({{{2, 0.1}}, {{0, -2.5}}})}}, {0});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(2));
  const StreamBatch b = packer->read_minibatch().streams[0];
  EXPECT_EQ(b.col_starts, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(values_of<double>(b), (std::vector<double>{0.1, -2.5}));
  EXPECT_EQ(b.value_at(2, 0), 0.1);
  EXPECT_EQ(b.value_at(0, 1), -2.5);
}

TEST(SequencePacker, SparseCountsBeyondTheEntriesAreAnErrorForTheFirstColumnThatOverflows) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("s", 5, StorageFormat::kSparseCsc)});
  // Three samples each. Key 3 overflows at its third sample (column (t2, row 0) = 4), key 4 at its second
  // (column (t1, row 1) = 3): the error names key 4, whose column comes first in storage order, although
  // key 3 comes first in the minibatch.
  SequenceData a = source->sparse<float>({{{0, 1.f}}, {{1, 2.f}}, {{2, 3.f}}});
  a.total_nnz = 2;
  SequenceData b = source->sparse<float>({{{0, 1.f}}, {{1, 2.f}}, {{2, 3.f}}});
  b.total_nnz = 1;
  source->add_call({{a}, {b}}, {3, 4});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(6));
  try {
    packer->read_minibatch();
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "The nnz counts of a sparse sequence exceed its number of entries.");
    EXPECT_EQ(e.location().stream, "s");
    EXPECT_EQ(e.location().sequence_key, "seq4");
  }
}

TEST(SequencePacker, ZeroLengthSequenceIsAnErrorNamingStreamAndKey) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 1), make_stream("labels", 1)});
  source->add_call({{source->dense<float>({1}, 1), source->dense<float>({}, 1)}}, {7});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(1));
  try {
    packer->read_minibatch();
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Sequences must be at least one frame long.");
    EXPECT_EQ(e.location().stream, "labels");
    EXPECT_EQ(e.location().sequence_key, "seq7");
  }
}

// With deferred values a minibatch has the same keys, flags, stream infos and layouts as a packed one, no
// values of its own, and the sequences the packer would have copied.
TEST(SequencePacker, DeferredValuesKeepTheLayoutsAndHoldTheSequencesInstead) {
  auto script = [](ScriptedEnumerator& source) {
    source.add_call({{source.dense<float>({1, 2, 3, 4, 5, 6}, 2), source.sparse<float>({{{1, 7.f}}, {}})},
                     {source.dense<float>({8, 9}, 2), source.sparse<float>({{{0, 1.f}, {2, 2.f}}})}},
                    {10, 11}, /*end_of_sweep=*/true);
    source.add_call({{source.dense<float>({3, 3}, 2), source.sparse<float>({{{4, 4.f}}})}}, {12});
  };
  auto [packed, deferred] =
      twin_packers({make_stream("d", 2), make_stream("s", 5, StorageFormat::kSparseCsc)}, script, 4);
  ASSERT_TRUE(deferred->defer_values(true));

  for (int m = 0; m < 2; ++m) {
    SCOPED_TRACE("minibatch " + std::to_string(m));
    const Minibatch want = packed->read_minibatch();
    const Minibatch got = deferred->read_minibatch();
    EXPECT_EQ(got.keys, want.keys);
    EXPECT_EQ(got.end_of_sweep, want.end_of_sweep);
    EXPECT_EQ(want.deferred_values, nullptr);
    ASSERT_NE(got.deferred_values, nullptr);
    const auto& held = static_cast<const DeferredValues*>(got.deferred_values.get())->sequences;
    ASSERT_EQ(got.streams.size(), 2u);
    ASSERT_EQ(held.data.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(got.streams[i].info.name, want.streams[i].info.name);
      EXPECT_EQ(got.streams[i].info.sample_shape, want.streams[i].info.sample_shape);
      EXPECT_EQ(got.streams[i].layout, want.streams[i].layout);
      EXPECT_TRUE(got.streams[i].values.empty());
      EXPECT_TRUE(got.streams[i].col_starts.empty());
      ASSERT_EQ(held.data[i].size(), got.keys.size());
    }
  }
  const Minibatch none = deferred->read_minibatch();
  EXPECT_TRUE(none.end_of_epoch);
  EXPECT_EQ(none.deferred_values, nullptr);
}

TEST(SequencePacker, DeferredValuesPointAtTheDeliveredSequences) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("d", 2)});
  source->add_call({{source->dense<float>({1, 2, 3, 4}, 2)}, {source->dense<float>({8, 9}, 2)}}, {1, 2});
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(8));
  ASSERT_TRUE(packer->defer_values(true));
  const Minibatch mb = packer->read_minibatch();
  const auto& data = static_cast<const DeferredValues*>(mb.deferred_values.get())->sequences.data[0];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[0].number_of_samples, 2u);
  EXPECT_EQ(static_cast<const float*>(data[1].values)[1], 9.f);
  EXPECT_EQ(static_cast<const DeferredValues*>(mb.deferred_values.get())->bytes, 2 * 2 * 2 * sizeof(float));
  EXPECT_FALSE(make_truncated_bptt_packer(source, 2)->defer_values(true));
}

TEST(SequencePacker, NoDataGivesFlagsOnly) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 1)});
  source->add_call({}, {}, /*end_of_sweep=*/true, /*end_of_epoch=*/false);
  auto packer = make_sequence_packer(source, false);
  packer->set_configuration(config_of(1));
  const Minibatch a = packer->read_minibatch();
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a.streams.empty());
  EXPECT_TRUE(a.keys.empty());
  EXPECT_TRUE(a.end_of_sweep);
  EXPECT_FALSE(a.end_of_epoch);
  const Minibatch b = packer->read_minibatch();
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(b.end_of_epoch);
  EXPECT_FALSE(b.end_of_sweep);
}

TEST(SequencePacker, DuplicateStreamNamesAreRejectedWithCntkText) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("feature", 1), make_stream("feature", 2)});
  for (int kind = 0; kind < 3; ++kind) {
    try {
      if (kind == 0) make_sequence_packer(source, true);
      if (kind == 1) make_frame_packer(source, true);
      if (kind == 2) make_truncated_bptt_packer(source, 2);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "Two streams with the same name 'feature' have been found. Please rename the duplicate.");
    }
  }
}

// ------------------------------------------------------------------------------------------------ budgets

TEST(PackerBudget, LocalMinibatchSizeFormula) {
  EXPECT_EQ(local_minibatch_size(10, 3, 0), 4u);
  EXPECT_EQ(local_minibatch_size(10, 3, 1), 3u);
  EXPECT_EQ(local_minibatch_size(10, 3, 2), 3u);
  EXPECT_EQ(local_minibatch_size(2, 3, 0), 1u);
  EXPECT_EQ(local_minibatch_size(2, 3, 1), 1u);
  EXPECT_EQ(local_minibatch_size(2, 3, 2), 1u);  // 0 is raised to 1
  EXPECT_EQ(local_minibatch_size(7, 1, 0), 7u);
}

TEST(PackerBudget, GlobalTimelineAsksForTheMinibatchSizeTwice) {
  for (bool frame : {false, true}) {
    auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
    auto packer = frame ? make_frame_packer(source, false) : make_sequence_packer(source, false);
    packer->set_configuration(config_of(7, 2, 1));
    packer->read_minibatch();
    EXPECT_EQ(source->requests, (std::vector<std::pair<size_t, size_t>>{{7, 7}}));
  }
}

TEST(PackerBudget, LocalTimelineAsksForTheWorkersShareWithoutGlobalLimit) {
  for (bool frame : {false, true}) {
    auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
    auto packer = frame ? make_frame_packer(source, true) : make_sequence_packer(source, true);
    packer->set_configuration(config_of(10, 3, 0));
    packer->read_minibatch();
    packer->set_configuration(config_of(10, 3, 2));
    packer->read_minibatch();
    packer->set_configuration(config_of(2, 3, 2));
    packer->read_minibatch();
    EXPECT_EQ(source->requests, (std::vector<std::pair<size_t, size_t>>{{kMax, 4}, {kMax, 3}, {kMax, 1}}));
  }
}

TEST(PackerBudget, MinibatchSizeZeroIsAUsageError) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  auto sequence = make_sequence_packer(source, false);
  auto frame = make_frame_packer(source, true);
  auto bptt = make_truncated_bptt_packer(source, 2);
  for (Packer* p : {sequence.get(), frame.get(), bptt.get()}) {
    try {
      p->set_configuration(config_of(0));
      FAIL() << "expected UsageError";
    } catch (const UsageError& e) {
      EXPECT_STREQ(e.what(), "Minibatch size cannot be zero.");
    }
  }
  EXPECT_THROW(sequence->set_configuration(config_of(4, 2, 2)), UsageError);
  EXPECT_THROW(sequence->read_minibatch(), UsageError);  // never configured
}

// ------------------------------------------------------------------------------------------------ frame
// packer

TEST(FramePacker, PacksNSamplesAsNRowsOfOneStep) {
  auto source = std::make_shared<ScriptedEnumerator>(
      std::vector{make_stream("f", 2), make_stream("l", 3, StorageFormat::kSparseCsc)});
  source->add_call({{source->dense<float>({1, 2}, 2), source->sparse<float>({{{2, 1.f}}})},
                    {source->dense<float>({3, 4}, 2), source->sparse<float>({{}})},
                    {source->dense<float>({5, 6}, 2), source->sparse<float>({{{0, 1.f}, {1, 2.f}}})}},
                   {5, 6, 7}, false, true);
  auto packer = make_frame_packer(source, false);
  packer->set_configuration(config_of(3));
  const Minibatch mb = packer->read_minibatch();
  EXPECT_TRUE(mb.end_of_epoch);
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"seq5", "seq6", "seq7"}));
  for (const StreamBatch& b : mb.streams) {
    EXPECT_EQ(b.layout.num_parallel, 3u);
    EXPECT_EQ(b.layout.num_time_steps, 1u);
    expect_entries(b.layout, {seq(0, 0, 0, 1), seq(1, 1, 0, 1), seq(2, 2, 0, 1)});
  }
  EXPECT_EQ(values_of<float>(mb.streams[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(mb.streams[1].col_starts, (std::vector<int32_t>{0, 1, 1, 3}));
  EXPECT_EQ(mb.streams[1].row_indices, (std::vector<int32_t>{2, 0, 1}));
}

TEST(FramePacker, RejectsNonFrameSequenceNamingStreamAndKey) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 1), make_stream("labels", 1)});
  source->add_call({{source->dense<float>({1}, 1), source->dense<float>({1}, 1)},
                    {source->dense<float>({1}, 1), source->dense<float>({1, 2, 3}, 1)}},
                   {1, 42});
  auto packer = make_frame_packer(source, false);
  packer->set_configuration(config_of(2));
  try {
    packer->read_minibatch();
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Detected a non-frame sequence of size 3 in frame mode.");
    EXPECT_EQ(e.location().stream, "labels");
    EXPECT_EQ(e.location().sequence_key, "seq42");
    EXPECT_NE(std::string(e.what()).find("seq42"), std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------------ truncated
// BPTT

// Scripted one-sequence results of a dense 1-dim stream: values are the sample numbers given.
void add_dense_sequence(ScriptedEnumerator& source, std::vector<float> values, uint64_t key,
                        bool end_of_sweep = false, bool end_of_epoch = false) {
  source.add_call({{source.dense<float>(std::move(values), 1)}}, {key}, end_of_sweep, end_of_epoch);
}

TEST(TruncatedBpttPacker, FillsSlotsAndContinuesSequencesAcrossMinibatches) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {10, 11, 12, 13, 14}, 1);          // A
  add_dense_sequence(*source, {20, 21}, 2);                      // B
  add_dense_sequence(*source, {30, 31, 32, 33}, 3, true, true);  // C: ends the sweep and the epoch
  auto packer = make_truncated_bptt_packer(source, 3);
  packer->set_configuration(config_of(6));  // 6 / 3 = 2 slots

  // Slot 0 = [A]; slot 1 = [B, C].
  const Minibatch m1 = packer->read_minibatch();
  EXPECT_EQ(source->requests, (std::vector<std::pair<size_t, size_t>>(3, {kMax, 1})));
  EXPECT_FALSE(m1.end_of_epoch);
  EXPECT_FALSE(m1.end_of_sweep);
  EXPECT_EQ(m1.keys, (std::vector<std::string>{"seq1", "seq2", "seq3"}));
  ASSERT_EQ(m1.streams.size(), 1u);
  EXPECT_EQ(m1.streams[0].layout.num_parallel, 2u);
  EXPECT_EQ(m1.streams[0].layout.num_time_steps, 3u);
  expect_entries(m1.streams[0].layout, {seq(0, 0, 0, 5), seq(1, 1, 0, 2), seq(2, 1, 2, 6)});
  EXPECT_EQ(values_of<float>(m1.streams[0]), (std::vector<float>{10, 20, 11, 21, 12, 30}));

  // A continues from sample 3 (tBegin -3) and ends with a gap; C continues from sample 1.
  const Minibatch m2 = packer->read_minibatch();
  EXPECT_TRUE(m2.end_of_epoch);  // eager: nothing left after this one
  EXPECT_TRUE(m2.end_of_sweep);  // C carried the sweep end
  EXPECT_EQ(m2.keys, (std::vector<std::string>{"seq1", "seq3"}));
  expect_entries(m2.streams[0].layout, {seq(0, 0, -3, 2), seq(1, 1, -1, 3), gap(0, 2, 3)});
  EXPECT_EQ(values_of<float>(m2.streams[0]), (std::vector<float>{13, 31, 14, 32, 0, 33}));
  EXPECT_EQ(m2.streams[0].layout.num_samples(), 5u);

  const Minibatch m3 = packer->read_minibatch();
  EXPECT_TRUE(m3.empty());
  EXPECT_TRUE(m3.end_of_epoch);
  EXPECT_FALSE(m3.end_of_sweep);
}

TEST(TruncatedBpttPacker, EmptySlotIsOneGapRow) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {1, 2, 3, 4}, 1, false, true);
  auto packer = make_truncated_bptt_packer(source, 2);
  packer->set_configuration(config_of(4));  // 2 slots, only one gets data
  const Minibatch m1 = packer->read_minibatch();
  expect_entries(m1.streams[0].layout, {seq(0, 0, 0, 4), gap(1, 0, 2)});
  EXPECT_EQ(values_of<float>(m1.streams[0]), (std::vector<float>{1, 0, 2, 0}));
  EXPECT_FALSE(m1.end_of_epoch);
  const Minibatch m2 = packer->read_minibatch();
  expect_entries(m2.streams[0].layout, {seq(0, 0, -2, 2), gap(1, 0, 2)});
  EXPECT_EQ(values_of<float>(m2.streams[0]), (std::vector<float>{3, 0, 4, 0}));
  EXPECT_TRUE(m2.end_of_epoch);
}

TEST(TruncatedBpttPacker, SplitsSlotsAcrossWorkers) {
  auto run = [](size_t mb, size_t workers, size_t rank) {
    auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
    for (uint64_t k = 0; k < 8; ++k) add_dense_sequence(*source, {1, 2, 3, 4, 5, 6}, k);
    auto packer = make_truncated_bptt_packer(source, 3);
    packer->set_configuration(config_of(mb, workers, rank));
    return packer->read_minibatch().streams[0].layout;
  };
  // 10 / 3 = 3 slots: worker 0 of 2 gets 2, worker 1 gets 1.
  EXPECT_EQ(run(10, 1, 0).num_parallel, 3u);
  EXPECT_EQ(run(10, 2, 0).num_parallel, 2u);
  EXPECT_EQ(run(10, 2, 1).num_parallel, 1u);
  EXPECT_EQ(run(10, 3, 2).num_parallel, 1u);
  EXPECT_EQ(run(2, 1, 0).num_parallel, 1u);  // at least one slot
  EXPECT_EQ(run(10, 2, 1).num_columns(), 3u);

  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  auto packer = make_truncated_bptt_packer(source, 3);
  try {
    packer->set_configuration(config_of(10, 4, 0));
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(
        e.what(),
        "Too many workers for minibatch size; please increase minibatch size or decrease number of workers.");
  }
}

TEST(TruncatedBpttPacker, ConfigurationDropsPartiallyPackedSequences) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {1, 2, 3, 4, 5}, 1);
  add_dense_sequence(*source, {6, 7, 8, 9, 10}, 2);
  auto packer = make_truncated_bptt_packer(source, 3);
  packer->set_configuration(config_of(3));
  EXPECT_EQ(values_of<float>(packer->read_minibatch().streams[0]), (std::vector<float>{1, 2, 3}));
  packer->set_configuration(config_of(3));  // new epoch: the rest of sequence 1 is gone
  const Minibatch mb = packer->read_minibatch();
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"seq2"}));
  expect_entries(mb.streams[0].layout, {seq(0, 0, 0, 5)});
  EXPECT_EQ(values_of<float>(mb.streams[0]), (std::vector<float>{6, 7, 8}));
}

// CNTK's older form (a flat HTK reader with truncated = true and no truncationLength): windows of the
// minibatch size, and the epoch's number of parallel utterances as slots (the last value repeats).
TEST(TruncatedBpttPacker, OlderFormUsesTheMinibatchSizeAndTheSlotsOfTheEpoch) {
  auto layout_of = [](size_t minibatch_size, size_t epoch, size_t workers = 1, size_t rank = 0) {
    auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
    for (uint64_t k = 0; k < 8; ++k) add_dense_sequence(*source, {1, 2, 3, 4, 5, 6, 7}, k);
    auto packer = make_truncated_bptt_packer(source, 0, 0, {2, 3});
    EpochConfiguration config = config_of(minibatch_size, workers, rank);
    config.epoch_index = epoch;
    packer->set_configuration(config);
    return packer->read_minibatch().streams[0].layout;
  };
  EXPECT_EQ(layout_of(4, 0).num_parallel, 2u);
  EXPECT_EQ(layout_of(4, 0).num_time_steps, 4u);
  EXPECT_EQ(layout_of(5, 1).num_parallel, 3u);
  EXPECT_EQ(layout_of(5, 1).num_time_steps, 5u);
  EXPECT_EQ(layout_of(5, 7).num_parallel, 3u);
  EXPECT_EQ(layout_of(5, 7, 2, 0).num_parallel, 2u);  // 3 slots over 2 workers
  EXPECT_EQ(layout_of(5, 7, 2, 1).num_parallel, 1u);
  // An explicit truncation length in the configuration still wins, with slots from the minibatch size.
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {1, 2, 3, 4, 5}, 1);
  auto packer = make_truncated_bptt_packer(source, 0, 0, {2});
  EpochConfiguration config = config_of(6);
  config.truncation_length = 3;
  packer->set_configuration(config);
  const Layout layout = packer->read_minibatch().streams[0].layout;
  EXPECT_EQ(layout.num_parallel, 2u);
  EXPECT_EQ(layout.num_time_steps, 3u);
}

TEST(TruncatedBpttPacker, ConfigurationTruncationLengthOverridesDefault) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {1, 2, 3, 4, 5}, 1);
  auto packer = make_truncated_bptt_packer(source, 0);
  try {
    packer->set_configuration(config_of(4));
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "Truncation size cannot be zero.");
  }
  EpochConfiguration config = config_of(4);
  config.truncation_length = 4;
  packer->set_configuration(config);
  const Minibatch mb = packer->read_minibatch();
  EXPECT_EQ(mb.streams[0].layout.num_time_steps, 4u);
  EXPECT_EQ(mb.streams[0].layout.num_parallel, 1u);
}

TEST(TruncatedBpttPacker, SparseInputIsPackedAsDense) {
  auto source = std::make_shared<ScriptedEnumerator>(
      std::vector{make_stream("words", 4, StorageFormat::kSparseCsc), make_stream("f", 1)});
  source->add_call({{source->sparse<float>({{{3, 1.5f}, {1, 2.f}, {3, 7.f}}, {{0, 4.f}}, {{2, 9.f}}}),
                     source->dense<float>({1, 2, 3}, 1)}},
                   {1}, false, true);
  auto packer = make_truncated_bptt_packer(source, 2);
  packer->set_configuration(config_of(2));
  const Minibatch m1 = packer->read_minibatch();
  const StreamBatch& words = m1.streams[0];
  EXPECT_EQ(words.info.storage, StorageFormat::kDense);
  EXPECT_TRUE(words.col_starts.empty());
  // Duplicate index 3: the last value wins.
  EXPECT_EQ(values_of<float>(words), (std::vector<float>{0, 2, 0, 7, 4, 0, 0, 0}));
  EXPECT_EQ(words.value_at(3, 0), 7.0);
  EXPECT_EQ(values_of<float>(m1.streams[1]), (std::vector<float>{1, 2}));
  // The sparse offset follows the cursor into the next minibatch.
  const Minibatch m2 = packer->read_minibatch();
  EXPECT_EQ(values_of<float>(m2.streams[0]), (std::vector<float>{0, 0, 9, 0, 0, 0, 0, 0}));
  expect_entries(m2.streams[0].layout, {seq(0, 0, -2, 1), gap(0, 1, 2)});
  EXPECT_TRUE(m2.streams[0].layout == m2.streams[1].layout);
  EXPECT_TRUE(m2.end_of_epoch);
}

TEST(TruncatedBpttPacker, RequiresEqualLengthsAcrossStreams) {
  auto source =
      std::make_shared<ScriptedEnumerator>(std::vector{make_stream("features", 1), make_stream("labels", 1)});
  source->add_call({{source->dense<float>({1, 2}, 1), source->dense<float>({1}, 1)}}, {5});
  auto packer = make_truncated_bptt_packer(source, 2);
  packer->set_configuration(config_of(2));
  try {
    packer->read_minibatch();
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(),
              "For BPTT sequences between different input stream should have the same length.");
    EXPECT_EQ(e.location().stream, "labels");
    EXPECT_EQ(e.location().sequence_key, "seq5");
  }
}

TEST(TruncatedBpttPacker, RightSpliceEmitsTheLastFramesAgain) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {0, 1, 2, 3, 4, 5, 6}, 1);
  auto packer = make_truncated_bptt_packer(source, 4, 2);
  packer->set_configuration(config_of(4));
  const Minibatch m1 = packer->read_minibatch();
  expect_entries(m1.streams[0].layout, {seq(0, 0, 0, 7)});
  EXPECT_EQ(values_of<float>(m1.streams[0]), (std::vector<float>{0, 1, 2, 3}));
  const Minibatch m2 = packer->read_minibatch();
  expect_entries(m2.streams[0].layout, {seq(0, 0, -2, 5)});
  EXPECT_EQ(values_of<float>(m2.streams[0]), (std::vector<float>{2, 3, 4, 5}));
  const Minibatch m3 = packer->read_minibatch();  // not a full window: no splice
  expect_entries(m3.streams[0].layout, {seq(0, 0, -4, 3), gap(0, 3, 4)});
  EXPECT_EQ(values_of<float>(m3.streams[0]), (std::vector<float>{4, 5, 6, 0}));
  EXPECT_TRUE(m3.end_of_epoch);

  // A splice as long as the window would never advance.
  auto stuck = make_truncated_bptt_packer(source, 4, 4);
  EXPECT_THROW(stuck->set_configuration(config_of(4)), UsageError);
}

TEST(TruncatedBpttPacker, RightSpliceIsNotAppliedWhenANewSequenceStarts) {
  auto source = std::make_shared<ScriptedEnumerator>(std::vector{make_stream("f", 1)});
  add_dense_sequence(*source, {0, 1}, 1);
  add_dense_sequence(*source, {10, 11, 12, 13, 14}, 2);
  auto packer = make_truncated_bptt_packer(source, 4, 1);
  packer->set_configuration(config_of(4));
  const Minibatch m1 = packer->read_minibatch();
  expect_entries(m1.streams[0].layout, {seq(0, 0, 0, 2), seq(1, 0, 2, 7)});
  EXPECT_EQ(values_of<float>(m1.streams[0]), (std::vector<float>{0, 1, 10, 11}));
  const Minibatch m2 = packer->read_minibatch();
  expect_entries(m2.streams[0].layout, {seq(0, 0, -2, 3), gap(0, 3, 4)});
  EXPECT_EQ(values_of<float>(m2.streams[0]), (std::vector<float>{12, 13, 14, 0}));
}

}  // namespace
}  // namespace cntkio::pipeline
