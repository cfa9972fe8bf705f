#include "multiply_transform.hpp"

#include <cntkio/errors.hpp>
#include <memory>
#include <vector>

namespace cntkio_npy {
namespace {

template <class T>
class MultiplyTransformer final : public cntkio::SequenceTransformer {
 public:
  MultiplyTransformer(double factor, size_t sample_dim)
      : factor_(static_cast<T>(factor)), sample_dim_(sample_dim) {}

  // The values change, their shape and type do not.
  cntkio::StreamInfo output_stream(const cntkio::StreamInfo& input) const override { return input; }

  // No state per slot: apply depends on its input alone.
  void start_batch(size_t) override {}

  cntkio::SequenceData apply(const cntkio::SequenceData& input, size_t,
                             std::shared_ptr<const void>& owner) override {
    if (input.values == nullptr)
      throw cntkio::UsageError("Multiply needs the values of a sequence, it got none.");
    size_t dim = sample_dim_;
    if (!input.sample_shape.empty()) {  // a sequence may give its own sample shape
      dim = 1;
      for (size_t d : input.sample_shape) dim *= d;
    }
    const auto* in = static_cast<const T*>(input.values);
    // The result holds a copy of the shape too: `input` may point into memory that goes before the result.
    struct Result {
      std::vector<T> values;
      std::vector<size_t> shape;
    };
    auto result = std::make_shared<Result>();
    result->values.resize(static_cast<size_t>(input.number_of_samples) * dim);
    for (size_t i = 0; i < result->values.size(); ++i) result->values[i] = in[i] * factor_;
    result->shape.assign(input.sample_shape.begin(), input.sample_shape.end());

    cntkio::SequenceData out = input;
    out.values = result->values.data();
    out.sample_shape = result->shape;
    owner = result;
    return out;
  }

 private:
  T factor_;
  size_t sample_dim_;
};

}  // namespace

cntkio::SequenceTransformerPtr make_multiply_transformer(double factor, const cntkio::StreamInfo& input) {
  if (input.storage != cntkio::StorageFormat::kDense) {
    throw cntkio::ConfigError("The Multiply transform needs a dense stream; '" + input.name + "' is sparse.",
                              "transforms");
  }
  if (input.element_type == cntkio::ElementType::kDouble) {
    return std::make_shared<MultiplyTransformer<double>>(factor, input.sample_dim());
  }
  return std::make_shared<MultiplyTransformer<float>>(factor, input.sample_dim());
}

}  // namespace cntkio_npy
