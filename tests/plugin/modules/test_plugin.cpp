// A plugin for the loader tests (tests/plugin/plugin_loader_test.cpp), built several times: each build
// registers the deserializer type TEST_PLUGIN_PREFIX "Deserializer" and the transform type
// TEST_PLUGIN_PREFIX "Add", so a test sees which build a search loaded. With TEST_PLUGIN_REGISTER_THROWS,
// its registration function throws after registering the deserializer type.
#include <algorithm>
#include <cntkio/plugin.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_plugin_options.hpp"

namespace cntkio_test_plugin {
namespace {

constexpr uint32_t kSequencesPerChunk = 4;

// Values as doubles or floats, per the reader's precision; sparse streams (fail = "sparse", "sparse_oob")
// hold one entry per sample.
class TestChunk final : public cntkio::Chunk {
 public:
  TestChunk(uint64_t first_key, uint64_t count, uint32_t length, bool is_double, std::string fail)
      : length_(length), fail_(std::move(fail)) {
    const bool sparse = fail_.rfind("sparse", 0) == 0;
    for (uint64_t k = first_key; k < first_key + count; ++k) {
      for (uint32_t t = 0; t < length; ++t) {
        const double value = static_cast<double>(10 * k + t);
        for (const double v : sparse ? std::vector<double>{value} : std::vector<double>{value, -value}) {
          if (is_double) {
            doubles_.push_back(v);
          } else {
            floats_.push_back(static_cast<float>(v));
          }
        }
        if (sparse) {
          indices_.push_back(fail_ == "sparse_oob" && t + 1 == length ? 2 : static_cast<int32_t>(t % 2));
          nnz_counts_.push_back(1);
        }
      }
    }
  }
  void get_sequence(uint32_t index_in_chunk, std::vector<cntkio::SequenceData>& out) const override {
    cntkio::SequenceData data;
    data.number_of_samples = length_ + (fail_ == "long" ? 1 : 0) - (fail_ == "short" ? 1 : 0);
    const size_t per_sample = indices_.empty() ? 2 : 1;
    const size_t offset = static_cast<size_t>(index_in_chunk) * length_ * per_sample;
    data.values = doubles_.empty() ? static_cast<const void*>(floats_.data() + offset)
                                   : static_cast<const void*>(doubles_.data() + offset);
    if (!indices_.empty()) {
      data.indices = indices_.data() + offset;
      data.nnz_counts = nnz_counts_.data() + offset;
      data.total_nnz = length_;
    }
    out.push_back(data);
  }

 private:
  uint32_t length_;
  std::string fail_;
  std::vector<float> floats_;
  std::vector<double> doubles_;
  std::vector<int32_t> indices_;
  std::vector<uint32_t> nnz_counts_;
};

class TestDeserializer final : public cntkio::Deserializer {
 public:
  TestDeserializer(Options options, cntkio::ElementType element_type)
      : options_(std::move(options)), element_type_(element_type) {
    cntkio::StreamInfo stream;
    stream.name = options_.stream;
    stream.element_type = element_type;
    stream.sample_shape = {2};
    if (options_.fail.rfind("sparse", 0) == 0) stream.storage = cntkio::StorageFormat::kSparseCsc;
    stream.defines_mb_size = true;
    streams_.push_back(stream);
  }
  const std::vector<cntkio::StreamInfo>& streams() const override { return streams_; }
  std::vector<cntkio::ChunkInfo> chunk_infos() const override {
    std::vector<cntkio::ChunkInfo> out;
    for (uint64_t first = 0; first < options_.sequences; first += kSequencesPerChunk) {
      cntkio::ChunkInfo info;
      info.id = static_cast<uint32_t>(out.size());
      info.number_of_sequences = std::min<uint64_t>(kSequencesPerChunk, options_.sequences - first);
      info.number_of_samples = info.number_of_sequences * options_.length;
      out.push_back(info);
    }
    return out;
  }
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<cntkio::SequenceInfo>& out) const override {
    const uint64_t first = static_cast<uint64_t>(chunk_id) * kSequencesPerChunk;
    for (uint64_t k = first; k < std::min<uint64_t>(first + kSequencesPerChunk, options_.sequences); ++k) {
      cntkio::SequenceInfo info;
      info.index_in_chunk = static_cast<uint32_t>(k - first);
      info.number_of_samples = options_.length;
      info.chunk_id = chunk_id;
      info.key.sequence = k;
      out.push_back(info);
    }
  }
  cntkio::ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (options_.fail == "load" && chunk_id == 1) {
      cntkio::SourceLocation where;
      where.file = "test-plugin-data";
      where.byte_offset = chunk_id;
      throw cntkio::FormatError("The test plugin refuses chunk 1.", where);
    }
    if (options_.fail == "throw" && chunk_id == 1)
      throw std::runtime_error("the test plugin's disk is on fire");
    const uint64_t first = static_cast<uint64_t>(chunk_id) * kSequencesPerChunk;
    return std::make_shared<TestChunk>(
        first, std::min<uint64_t>(kSequencesPerChunk, options_.sequences - first), options_.length,
        element_type_ == cntkio::ElementType::kDouble, options_.fail);
  }

 private:
  Options options_;
  cntkio::ElementType element_type_;
  std::vector<cntkio::StreamInfo> streams_;
};

template <class T>
std::shared_ptr<const void> add_to(const cntkio::SequenceData& input, double amount,
                                   cntkio::SequenceData& out) {
  auto values = std::make_shared<std::vector<T>>(static_cast<size_t>(input.number_of_samples) * 2);
  const auto* in = static_cast<const T*>(input.values);
  for (size_t i = 0; i < values->size(); ++i) (*values)[i] = static_cast<T>(in[i] + amount);
  out.values = values->data();
  return values;
}

class AddTransformer final : public cntkio::SequenceTransformer {
 public:
  AddTransformer(AddOptions options, bool is_double)
      : amount_(options.amount), grows_(options.adds_a_sample), is_double_(is_double) {}
  cntkio::StreamInfo output_stream(const cntkio::StreamInfo& input) const override { return input; }
  void start_batch(size_t) override {}
  cntkio::SequenceData apply(const cntkio::SequenceData& input, size_t,
                             std::shared_ptr<const void>& owner) override {
    cntkio::SequenceData out = input;
    owner = is_double_ ? add_to<double>(input, amount_, out) : add_to<float>(input, amount_, out);
    if (grows_) ++out.number_of_samples;
    return out;
  }

 private:
  double amount_;
  bool grows_;
  bool is_double_;
};

cntkio::DeserializerType deserializer_type() {
  cntkio::DeserializerType type;
  type.name = TEST_PLUGIN_PREFIX "Deserializer";
  type.spec_from_config = [](const cntkio::Config& section, const cntkio::ConfigContext& context) {
    Options options;
    options.sequences = section.get_uint("sequences", options.sequences);
    options.length = static_cast<uint32_t>(section.get_uint("length", options.length));
    options.stream = section.get_string("stream", options.stream);
    options.fail = section.get_string("fail", "");
    if (options.fail == "config") throw section.error("fail", "The test plugin refuses this section.");
    cntkio::DeserializerSpec spec;
    spec.options = options;
    if (section.exists_current("input")) {
      const cntkio::Config input = section.get_block("input");
      for (const std::string& name : input.keys()) {
        spec.transforms.push_back({name, context.stream_transforms(input.get_block(name))});
      }
    }
    return spec;
  };
  type.create = [](const cntkio::DeserializerSpec& spec, const cntkio::DeserializerContext& context) {
    return std::make_shared<TestDeserializer>(
        cntkio::options_of<Options>(spec, "cntkio_test_plugin::Options"), context.element_type);
  };
  return type;
}

cntkio::TransformType transform_type() {
  cntkio::TransformType type;
  type.name = TEST_PLUGIN_PREFIX "Add";
  type.spec_from_config = [](const cntkio::Config& section) {
    cntkio::TransformSpec spec;
    spec.options = AddOptions{section.get_double("amount", 0), section.get_bool("addsASample", false)};
    return spec;
  };
  type.create = [](const cntkio::TransformSpec& spec, const cntkio::StreamInfo& input,
                   const cntkio::TransformContext&) {
    const AddOptions options = cntkio::options_of<AddOptions>(spec, "cntkio_test_plugin::AddOptions");
    return std::make_shared<AddTransformer>(options, input.element_type == cntkio::ElementType::kDouble);
  };
  return type;
}

void register_types(cntkio::PluginRegistrar& registrar) {
  registrar.add_deserializer(deserializer_type());
  registrar.add_transform(transform_type());
#ifdef TEST_PLUGIN_REGISTER_THROWS
  throw std::runtime_error("the test plugin's registration gives up");
#endif
}

}  // namespace
}  // namespace cntkio_test_plugin

CNTKIO_PLUGIN(cntkio_test_plugin::register_types)
