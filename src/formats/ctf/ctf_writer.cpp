// CtfWriter and the exact spelling of numbers for CNTK's CTF number parser (spec ctf.md §6.6).
//
// CNTK does not parse numbers with strtod: it accumulates digits in double and divides or multiplies by
// powers of ten, so the correctly rounded shortest spelling of a double is read back 1 ulp off about one
// time in seven. The writer therefore checks each spelling with the same formula and, when it does not
// come back exact, tries other spellings (fewer or more digits, fixed or exponent form, neighbouring last
// digits) until one does. Floats and doubles that came from text always find one; only extreme doubles
// (some subnormals and huge integers) may not, and are then written with 17 digits and counted.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "core/output_file.hpp"
#include "formats/ctf/ctf_number.hpp"

namespace cntkio {
namespace {

bool same_value(double parsed, double value, ElementType type) {
  if (std::isnan(value)) return std::isnan(parsed);
  if (type == ElementType::kFloat) {
    return std::bit_cast<uint32_t>(static_cast<float>(parsed)) ==
           std::bit_cast<uint32_t>(static_cast<float>(value));
  }
  return std::bit_cast<uint64_t>(parsed) == std::bit_cast<uint64_t>(value);
}

bool reads_back(std::string_view text, double value, ElementType type) {
  const std::optional<double> parsed = ctf_parse_number(text);
  return parsed && same_value(*parsed, value, type);
}

std::string chars(double value, ElementType type, std::chars_format format, int precision) {
  char buffer[512];
  std::to_chars_result r;
  if (type == ElementType::kFloat) {
    const auto f = static_cast<float>(value);
    r = precision < 0 ? std::to_chars(buffer, buffer + sizeof buffer, f)
                      : std::to_chars(buffer, buffer + sizeof buffer, f, format, precision);
  } else {
    r = precision < 0 ? std::to_chars(buffer, buffer + sizeof buffer, value)
                      : std::to_chars(buffer, buffer + sizeof buffer, value, format, precision);
  }
  if (r.ec != std::errc()) return {};
  return std::string(buffer, r.ptr);
}

// Adds `delta` to a string of decimal digits; empty if the number of digits would change.
std::string add_to_digits(std::string digits, int delta) {
  long carry = delta;
  for (size_t i = digits.size(); i-- > 0 && carry != 0;) {
    long d = (digits[i] - '0') + carry;
    long q = d >= 0 ? d / 10 : -((-d + 9) / 10);
    d -= q * 10;
    digits[i] = static_cast<char>('0' + d);
    carry = q;
  }
  if (carry != 0 || digits[0] == '0') return {};
  return digits;
}

// Spells `value` so that ctf_parse_number gives it back; false (with a 17/9-digit spelling) if no spelling
// was found.
bool spell(double value, ElementType type, std::string& out) {
  if (std::isnan(value)) {
    out = "0e999";  // 0 * 10^999 = 0 * inf = NaN
    return true;
  }
  if (std::isinf(value)) {
    out = value > 0 ? "1e999" : "-1e999";
    return true;
  }
  out = chars(value, type, std::chars_format::general, -1);  // shortest round trip
  if (reads_back(out, value, type)) return true;
  const int max_digits = type == ElementType::kFloat ? 9 : 17;
  const double magnitude = std::fabs(value);
  const int exponent10 = magnitude == 0 ? 0 : static_cast<int>(std::floor(std::log10(magnitude)));
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::string text = chars(value, type, std::chars_format::scientific, digits - 1);
    if (!text.empty() && reads_back(text, value, type)) {
      out = std::move(text);
      return true;
    }
    const int decimals = digits - 1 - exponent10;
    if (decimals >= 0 && decimals <= 400) {
      text = chars(value, type, std::chars_format::fixed, decimals);
      if (!text.empty() && reads_back(text, value, type)) {
        out = std::move(text);
        return true;
      }
    }
  }
  // Neighbouring decimals in three shapes: d.ddde±x, ddd e±x and fixed notation.
  const std::string sign = std::signbit(value) ? "-" : "";
  for (int digits = max_digits - 2; digits <= max_digits + 4; ++digits) {
    const std::string scientific =
        chars(magnitude, ElementType::kDouble, std::chars_format::scientific, digits - 1);
    const size_t e = scientific.find('e');
    if (e == std::string::npos) continue;
    std::string mantissa;
    for (size_t i = 0; i < e; ++i) {
      if (scientific[i] != '.') mantissa.push_back(scientific[i]);
    }
    const int exp = std::stoi(scientific.substr(e + 1));
    const int int_exp = exp - (digits - 1);  // value = mantissa * 10^int_exp
    for (int shape = 0; shape < 3; ++shape) {
      for (int k = 0; k <= 60; ++k) {
        for (int direction : {1, -1}) {
          if (k == 0 && direction < 0) continue;
          const std::string m = add_to_digits(mantissa, direction * k);
          if (m.empty()) continue;
          std::string text = sign;
          if (shape == 0) {
            text += m.substr(0, 1) + "." + m.substr(1) + "e" + std::to_string(exp);
          } else if (shape == 1) {
            text += m + "e" + std::to_string(int_exp);
          } else {
            const long point = static_cast<long>(m.size()) + int_exp;  // digits before the decimal point
            if (point > 400 || point < -400) continue;
            if (point <= 0) {
              text += "0." + std::string(static_cast<size_t>(-point), '0') + m;
            } else if (point >= static_cast<long>(m.size())) {
              text += m + std::string(static_cast<size_t>(point) - m.size(), '0');
            } else {
              text += m.substr(0, static_cast<size_t>(point)) + "." + m.substr(static_cast<size_t>(point));
            }
          }
          if (reads_back(text, value, type)) {
            out = std::move(text);
            return true;
          }
        }
      }
    }
  }
  out = chars(value, type, std::chars_format::general, max_digits);
  return false;
}

bool valid_alias(const std::string& alias) {
  if (alias.empty() || alias[0] == '#') return false;
  for (char c : alias) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x80 || c == '|') return false;
  }
  return true;
}

}  // namespace

std::optional<double> ctf_parse_number(std::string_view text) {
  // The reader's own state machine, which must consume the whole text.
  if (text.empty()) return std::nullopt;
  const ctf::NumberResult r = ctf::parse_number_exact(text.data(), text.data() + text.size(), true);
  if (r.status != ctf::NumberStatus::kOk || r.end != text.data() + text.size()) return std::nullopt;
  return r.value;
}

std::string ctf_number_text(double value, ElementType type) {
  std::string out;
  spell(value, type, out);
  return out;
}

struct CtfWriter::Impl {
  Impl(std::string path, std::vector<CtfWriterStream> s) : streams(std::move(s)), out(std::move(path)) {
    if (streams.empty()) throw UsageError("A CTF file needs at least one stream.");
    for (const CtfWriterStream& st : streams) {
      if (!valid_alias(st.alias)) {
        throw UsageError(
            "'" + st.alias +
            "' cannot be a CTF input name: it must be non-empty, must not start with '#', and may "
            "hold only printable ASCII other than space and '|'.");
      }
      if (st.dim == 0) throw UsageError("Stream '" + st.alias + "' has dimension 0.");
    }
  }

  void number(const void* values, size_t i, ElementType type) {
    double v;
    if (type == ElementType::kFloat) {
      float f;
      std::memcpy(&f, static_cast<const unsigned char*>(values) + 4 * i, 4);
      v = f;
    } else {
      std::memcpy(&v, static_cast<const unsigned char*>(values) + 8 * i, 8);
    }
    if (!spell(v, type, text)) ++inexact;
    line += text;
  }

  void add(std::string_view id, const std::vector<SequenceData>& data,
           const std::vector<ElementType>& types) {
    if (data.size() != streams.size() || types.size() != streams.size()) {
      throw UsageError("CtfWriter::add_sequence got " + std::to_string(data.size()) +
                       " stream(s) for a file with " + std::to_string(streams.size()) + ".");
    }
    if (id.empty() || id.find_first_not_of("0123456789") != std::string_view::npos) {
      throw UsageError("CTF sequence id '" + std::string(id) + "' must be a non-empty string of digits.");
    }
    // Consecutive lines with the same id are one sequence to a CTF reader: two such sequences would merge.
    std::string_view id_number = id.substr(std::min(id.find_first_not_of('0'), id.size() - 1));
    if (id_number == previous_id) {
      throw UsageError("Two sequences in a row have the id " + std::string(id) +
                       ": a CTF reader would read them as one sequence. (With definesMBSize, a sequence "
                       "dropped between two with the same id brings them together.) Write CBF instead, or "
                       "give the sequences distinct ids.");
    }
    previous_id.assign(id_number);
    uint32_t rows = 0;
    std::vector<size_t> offsets(streams.size(), 0);  // sparse: entries written so far
    for (size_t s = 0; s < streams.size(); ++s) {
      const SequenceData& d = data[s];
      const std::string where = "Stream '" + streams[s].alias + "' of sequence " + std::string(id);
      if (!d.valid) throw UsageError(where + " has no valid data.");
      if (d.number_of_samples == 0) {
        throw UsageError(
            where +
            " has no sample; CTF cannot represent a stream that is empty in a sequence (CNTK's text "
            "reader rejects it).");
      }
      rows = std::max(rows, d.number_of_samples);
      if (streams[s].storage == StorageFormat::kSparseCsc) {
        uint64_t nnz = 0;
        for (uint32_t k = 0; k < d.number_of_samples; ++k) nnz += d.nnz_counts[k];
        if (nnz > d.total_nnz) throw UsageError(where + ": its nnz counts exceed its entries.");
        for (uint64_t k = 0; k < nnz; ++k) {
          if (d.indices[k] < 0 || static_cast<uint64_t>(d.indices[k]) >= streams[s].dim) {
            throw UsageError(where + " has index " + std::to_string(d.indices[k]) +
                             ", outside its dimension " + std::to_string(streams[s].dim) + ".");
          }
        }
      }
    }
    for (uint32_t t = 0; t < rows; ++t) {
      line.assign(id);
      for (size_t s = 0; s < streams.size(); ++s) {
        const SequenceData& d = data[s];
        if (t >= d.number_of_samples) continue;
        const CtfWriterStream& st = streams[s];
        line += " |";
        line += st.alias;
        if (st.storage == StorageFormat::kDense) {
          for (uint64_t k = 0; k < st.dim; ++k) {
            line.push_back(' ');
            number(d.values, t * st.dim + k, types[s]);
          }
          continue;
        }
        for (uint32_t e = 0; e < d.nnz_counts[t]; ++e, ++offsets[s]) {
          line.push_back(' ');
          line += std::to_string(d.indices[offsets[s]]);
          line.push_back(':');
          number(d.values, offsets[s], types[s]);
        }
      }
      line.push_back('\n');
      out.write(line.data(), line.size());
    }
  }

  std::vector<CtfWriterStream> streams;
  core::OutputFile out;
  std::string previous_id;  // of the last sequence, without leading zeros
  std::string line;
  std::string text;
  uint64_t inexact = 0;
};

CtfWriter::CtfWriter(std::string path, std::vector<CtfWriterStream> streams)
    : impl_(std::make_unique<Impl>(std::move(path), std::move(streams))) {}
CtfWriter::~CtfWriter() = default;

void CtfWriter::add_sequence(std::string_view id, const std::vector<SequenceData>& data,
                             const std::vector<ElementType>& types) {
  impl_->add(id, data, types);
}
void CtfWriter::finish() {
  impl_->out.commit();
}
uint64_t CtfWriter::bytes_written() const {
  return impl_->out.position();
}
uint64_t CtfWriter::inexact_values() const {
  return impl_->inexact;
}

}  // namespace cntkio
