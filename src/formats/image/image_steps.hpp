// The steps of CNTK's image transforms (spec image.md §8–§9): each works on one image, kept as an OpenCV
// matrix between steps. image_transformer.cpp runs a chain of them as a SequenceTransformer.
//
// Thread-safety: start_batch is called by one thread; apply may then run concurrently for different slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <opencv2/core.hpp>

#include "cntkio/image.hpp"
#include "core/logger.hpp"
#include "formats/image/image_random.hpp"

namespace cntkio::image {

// The image of one sequence while it goes through the transforms.
struct Sample {
  cv::Mat mat;          // interleaved HWC (8U, 32F or 64F), possibly an ROI; planar: C*H rows x W columns
  bool planar = false;  // after Transpose
  int channels = 0;     // planar only
  uint32_t copy_id = 0;
};

// The stream-level sample layout CNTK tracks through the transforms (§8.2).
struct StreamLayout {
  bool known = false;
  size_t channels = 0, width = 0, height = 0;
  bool planar = false;
};

/// OpenCV's depth for floating-point values of `type`.
int float_depth(ElementType type);

/// One transform of a chain.
class ImageTransform {
 public:
  virtual ~ImageTransform() = default;
  virtual void start_batch(size_t batch_size) { (void)batch_size; }
  virtual void apply(Sample& sample, size_t slot) = 0;
  virtual void update_layout(StreamLayout& layout) const { (void)layout; }
  virtual const char* name() const = 0;
  /// The engines of a transform that can draw random numbers with its options; null for one that never does.
  virtual EngineSet* random_engines() { return nullptr; }
};

/// The step `options` describes; `precision` is the reader's element type (the transforms that compute in
/// floating point use it); `logger` gets the Mean transform's size warning. Reads mean and eigen files now:
/// throws FormatError/ConfigError for bad files or settings.
std::shared_ptr<ImageTransform> make_image_step(const ImageTransformOptions& options, ElementType precision,
                                                std::shared_ptr<core::Logger> logger);

}  // namespace cntkio::image
