// The SequenceTransformer of image transforms: a chain of image steps (image_steps.hpp) that decodes the
// image (or takes a dense [C, W, H] sample), applies the steps in order and ends with CNTK's Cast to the
// stream's element type. Each image transform type registers one; consecutive ones fuse into one chain.
#include <array>
#include <span>

#include "cntkio/errors.hpp"
#include "cntkio/registry.hpp"
#include "formats/image/image_source.hpp"
#include "formats/image/image_steps.hpp"
#include "formats/image/image_transforms.hpp"

namespace cntkio::image {
namespace {

// ------------------------------------------------------------------------------------------- Transformer

// What an output item points into.
struct Output {
  cv::Mat values;  // continuous, of the stream's element type
  std::array<size_t, 3> shape{};
};

class ImageStreamTransformer final : public SequenceTransformer {
 public:
  ImageStreamTransformer(std::vector<std::shared_ptr<ImageTransform>> chain, ElementType precision,
                         std::string stream_name, const StreamInfo& input)
      : chain_(std::move(chain)), precision_(precision), stream_name_(std::move(stream_name)), input_(input) {
    for (auto& t : chain_) {
      if (EngineSet* engines = t->random_engines()) random_.push_back(engines);
    }
  }

  // Two image transformers run as one: the image stays decoded (and in its own depth) in between, and only
  // the last casts to the stream's element type, as CNTK's chain does.
  SequenceTransformerPtr fused_with(const SequenceTransformerPtr& next) const override {
    const auto* images = dynamic_cast<const ImageStreamTransformer*>(next.get());
    if (images == nullptr) return nullptr;
    std::vector<std::shared_ptr<ImageTransform>> chain = chain_;
    chain.insert(chain.end(), images->chain_.begin(), images->chain_.end());
    return std::make_shared<ImageStreamTransformer>(std::move(chain), images->precision_, stream_name_,
                                                    input_);
  }

  StreamInfo output_stream(const StreamInfo& input) const override {
    StreamLayout layout = input_layout(input);
    for (const auto& t : chain_) t->update_layout(layout);
    StreamInfo out = input;
    out.element_type = precision_;
    out.storage = StorageFormat::kDense;
    out.sample_shape.clear();
    if (layout.known) {
      out.sample_shape = layout.planar ? std::vector<size_t>{layout.width, layout.height, layout.channels}
                                       : std::vector<size_t>{layout.channels, layout.width, layout.height};
    }
    return out;
  }

  void start_batch(size_t batch_size) override {
    for (auto& t : chain_) t->start_batch(batch_size);
  }

  size_t random_transforms() const override { return random_.size(); }

  std::vector<std::vector<uint64_t>> random_draws() const override {
    std::vector<std::vector<uint64_t>> out;
    out.reserve(random_.size());
    for (const EngineSet* engines : random_) out.push_back(engines->draws());
    return out;
  }

  void reposition_random_draws(const std::vector<std::vector<uint64_t>>& draws) override {
    if (draws.size() != random_.size()) {
      throw UsageError("The image stream '" + stream_name_ + "' has " + std::to_string(random_.size()) +
                       " random transforms, but the draws of " + std::to_string(draws.size()) +
                       " were given.");
    }
    for (size_t i = 0; i < random_.size(); ++i) random_[i]->reposition(draws[i]);
  }

  SequenceData apply(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) override {
    if (input.native == nullptr) return apply_to_values(input, slot, owner);
    const auto& native = *static_cast<const NativeImage*>(input.native);
    Sample sample;
    sample.copy_id = native.copy_id;
    sample.mat = native.decoded.empty() ? native.sources->decode(native.index) : native.decoded;
    auto output = std::make_shared<Output>();
    try {
      for (auto& t : chain_) t->apply(sample, slot);
      finish(sample, *output);
    } catch (const cv::Exception& e) {
      throw FormatError(std::string("OpenCV failed while transforming an image: ") + e.what(),
                        location(native));
    } catch (const FormatError&) {
      throw;
    } catch (const Error& e) {
      throw FormatError(e.cntk_text(), location(native));
    }
    SequenceData out;
    out.number_of_samples = 1;
    out.values = output->values.data;
    out.sample_shape = std::span<const size_t>(output->shape.data(), output->shape.size());
    owner = std::move(output);
    return out;
  }

 private:
  // A dense stream whose samples are images [C, W, H] (CNTK's shape order), e.g. CTF rows of pixels: each
  // sample is transformed as an interleaved image of the stream's element type.
  SequenceData apply_to_values(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) {
    const std::span<const size_t> shape =
        !input.sample_shape.empty() ? input.sample_shape : std::span<const size_t>(input_.sample_shape);
    if (input.values == nullptr || shape.size() != 3 || input.number_of_samples != 1) {
      throw Error("The image transforms of stream '" + stream_name_ +
                  "' need images: items of an image deserializer, or one dense sample of shape [channels, "
                  "width, height] per sequence.");
    }
    const int type =
        CV_MAKETYPE(input_.element_type == ElementType::kFloat ? CV_32F : CV_64F, static_cast<int>(shape[0]));
    Sample sample;
    // A copy: the steps may work in place, and the values belong to a chunk.
    sample.mat =
        cv::Mat(static_cast<int>(shape[2]), static_cast<int>(shape[1]), type, const_cast<void*>(input.values))
            .clone();
    auto output = std::make_shared<Output>();
    try {
      for (auto& t : chain_) t->apply(sample, slot);
      finish(sample, *output);
    } catch (const cv::Exception& e) {
      throw Error(std::string("OpenCV failed while transforming an image of stream '") + stream_name_ +
                  "': " + e.what());
    }
    SequenceData out;
    out.number_of_samples = 1;
    out.values = output->values.data;
    out.sample_shape = std::span<const size_t>(output->shape.data(), output->shape.size());
    owner = std::move(output);
    return out;
  }

  static StreamLayout input_layout(const StreamInfo& input) {
    StreamLayout layout;
    if (input.sample_shape.size() == 3) {
      layout.known = true;
      layout.channels = input.sample_shape[0];
      layout.width = input.sample_shape[1];
      layout.height = input.sample_shape[2];
    }
    return layout;
  }

  SourceLocation location(const NativeImage& native) const {
    SourceLocation where;
    where.file = native.sources != nullptr ? native.sources->map_file() : std::string();
    where.line = native.line + 1;
    where.stream = stream_name_;
    return where;
  }

  // CNTK's final Cast: the element type of the stream, layout unchanged.
  void finish(const Sample& sample, Output& output) const {
    const int depth = float_depth(precision_);
    if (sample.planar) {
      const int height = sample.mat.rows / sample.channels;
      output.values = sample.mat;
      output.shape = {static_cast<size_t>(sample.mat.cols), static_cast<size_t>(height),
                      static_cast<size_t>(sample.channels)};
    } else {
      if (sample.mat.depth() == depth && sample.mat.isContinuous()) {
        output.values = sample.mat;
      } else {
        sample.mat.convertTo(output.values, depth);
      }
      output.shape = {static_cast<size_t>(sample.mat.channels()), static_cast<size_t>(sample.mat.cols),
                      static_cast<size_t>(sample.mat.rows)};
    }
  }

  std::vector<std::shared_ptr<ImageTransform>> chain_;
  std::vector<EngineSet*> random_;  // the engines of the transforms that can draw, in chain order
  ElementType precision_;
  std::string stream_name_;
  StreamInfo input_;  // what the first transform receives
};

}  // namespace

SequenceTransformerPtr make_image_transformer(const std::vector<ImageTransformOptions>& transforms,
                                              ElementType element_type, const std::string& stream_name,
                                              std::shared_ptr<core::Logger> logger, const StreamInfo& input) {
  std::vector<std::shared_ptr<ImageTransform>> chain;
  for (const ImageTransformOptions& options : transforms)
    chain.push_back(make_image_step(options, element_type, logger));
  return std::make_shared<ImageStreamTransformer>(std::move(chain), element_type, stream_name, input);
}

namespace {

template <class Options>
TransformType image_transform_type(const char* name) {
  TransformType type;
  type.name = name;
  type.spec_from_config = [name](const Config& record) {
    TransformSpec spec;
    spec.type = name;
    spec.options = std::get<Options>(image_transform_options_from_config(record));
    return spec;
  };
  type.create = [name](const TransformSpec& spec, const StreamInfo& input, const TransformContext& context) {
    const Options options = options_of<Options>(spec, name);
    check_transform_options(ImageTransformOptions(options));  // a spec built in code was never parsed
    auto logger =
        std::make_shared<core::Logger>(context.trace_level, core::sink_from_options(context.log_sink));
    return make_image_transformer({ImageTransformOptions(options)}, context.element_type, input.name, logger,
                                  input);
  };
  return type;
}

}  // namespace

void register_image_transforms() {
  register_transform(image_transform_type<ImageCropOptions>("Crop"));
  register_transform(image_transform_type<ImageScaleOptions>("Scale"));
  register_transform(image_transform_type<ImageColorOptions>("Color"));
  register_transform(image_transform_type<ImageIntensityOptions>("Intensity"));
  register_transform(image_transform_type<ImageMeanOptions>("Mean"));
  register_transform(image_transform_type<ImageTransposeOptions>("Transpose"));
  // CNTK appends Cast to every image stream's chain: the element type of the reader. Alone, it decodes.
  TransformType cast;
  cast.name = "Cast";
  cast.spec_from_config = [](const Config&) {
    TransformSpec spec;
    spec.type = "Cast";
    return spec;
  };
  cast.create = [](const TransformSpec&, const StreamInfo& input, const TransformContext& context) {
    auto logger =
        std::make_shared<core::Logger>(context.trace_level, core::sink_from_options(context.log_sink));
    return make_image_transformer({}, context.element_type, input.name, logger, input);
  };
  register_transform(std::move(cast));
}

}  // namespace cntkio::image
