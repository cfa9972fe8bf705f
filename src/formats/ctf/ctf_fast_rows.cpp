// The fast row path of the CTF parser: whole sequences of well-formed rows, through local pointers, with
// values written once into the part's storage. The hot loop of a CTF read; what it calls is inline here.
#include <algorithm>

#include "formats/ctf/ctf_chunk_parser.hpp"
#include "formats/ctf/ctf_number.hpp"

namespace cntkio::ctf {

// The rows of the current sequence, as read_row() reads them, for rows made only of what the fast path
// decides: an optional id; samples `|name` of known streams separated by blanks (' ', '\t', '\r'); a
// dense sample of exactly its dimension of numbers that parse_number_fast decides, a sparse sample of
// `index:number` pairs with indices below the dimension; at most one sample per stream; a final LF. Such
// a row draws no message and no error in the general path, whose loop it mirrors step for step; the
// values and sample counts are the same. Returns false at anything else, leaving partial output that the
// caller discards before parsing the sequence again with read_row().
template <typename T>
bool ChunkParser<T>::read_rows_fast(uint64_t& rows_read) {
  // Rows are counted in a local and added to rows_read at the end: counted through the reference, as when
  // this function shared a file with its caller, the dense loop compiled differently and took 10-13 % longer.
  uint64_t rows = 0;
  const size_t num_streams = storage_.size();
  const char* p = data_ + pos_;
  const char* const e = data_ + end_;
  while (p < e) {
    while (p < e && is_digit(*p)) ++p;  // the sequence id, already known from the index
    size_t samples_in_row = 0;
    for (;;) {
      while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
      if (p >= e) return false;
      if (*p == kRowDelimiter) break;
      if (*p != kNamePrefix) return false;
      ++p;
      const char* const name = p;
      const char* const name_stop =
          e - p > static_cast<ptrdiff_t>(max_alias_length_) ? p + max_alias_length_ + 1 : e;
      while (p < name_stop && !is_value_delimiter(*p) && *p != kNamePrefix && is_printable(*p)) ++p;
      const size_t name_length = static_cast<size_t>(p - name);
      if (p >= e || name_length == 0 || name_length > max_alias_length_ || *name == kCommentMarker) {
        return false;
      }
      const size_t stream = find_stream(std::string_view(name, name_length));
      if (stream == num_streams) return false;
      StreamStorage<T>& storage = storage_[stream];
      if (dense_[stream]) {
        const size_t dim = dims_[stream];
        T* const first = storage.values.make_room(dim);
        T* out = first;
        T* const out_end = first + dim;
        for (;;) {
          while (p < e && is_value_delimiter(*p)) ++p;
          double value;
          if (!parse_number_fast(p, e, false, value)) {
            // The end of the sample, or a number only the state machine decides.
            if (p >= e) return false;
            if (*p == kNamePrefix || *p == kRowDelimiter || *p == '\r') break;
            if (!parse_number_slow(p, e, value)) return false;
          }
          if (out == out_end) return false;
          *out++ = static_cast<T>(value);
        }
        if (out != out_end) return false;
        storage.values.set_size(storage.values.size() + dim);
      } else {
        const uint64_t dim = dims_[stream];
        T* values = storage.values.data();
        int32_t* indices = storage.indices.data();
        size_t n = storage.values.size();
        const size_t first = n;
        // Room grows with the sample's entries (the part's storage was reserved ahead): room for the rest
        // of the sequence in every sparse stream would cost streams times bytes.
        size_t room = std::min(storage.values.capacity(), storage.indices.capacity());
        for (;;) {
          while (p < e && is_value_delimiter(*p)) ++p;
          if (p >= e) return false;
          if (*p == kNamePrefix || *p == kRowDelimiter || *p == '\r') break;
          if (n == room) {
            const size_t more = std::max<size_t>(16, n - first);
            values = storage.values.make_room(n - first + more) - first;  // size() is still `first`
            indices = storage.indices.make_room(n - first + more) - first;
            room = n + more;
          }
          const char* const digits = p;
          uint64_t index = 0;
          while (p < e && is_digit(*p) && p - digits < 10)
            index = index * 10 + static_cast<uint64_t>(*p++ - '0');
          double value;
          if (p == digits || p >= e || *p != kIndexDelimiter || index >= dim) return false;
          ++p;
          if (!parse_number_fast(p, e, false, value) && !parse_number_slow(p, e, value)) {
            return false;
          }
          values[n] = static_cast<T>(value);
          indices[n] = static_cast<int32_t>(index);
          ++n;
        }
        storage.values.set_size(n);
        storage.indices.set_size(n);
        storage.nnz_counts.push_back(static_cast<uint32_t>(n - first));
      }
      ++samples_[stream];
      if (++samples_in_row > num_streams) return false;
    }
    if (samples_in_row == 0) return false;
    ++p;  // the LF
    ++rows;
  }
  pos_ = static_cast<size_t>(p - data_);
  rows_read += rows;
  return true;
}

// The numbers parse_number_fast leaves undecided, by the exact state machine, without messages; a number
// running into `e` fails. Out of line: it is rare, and the hot loops stay small.
template <typename T>
bool ChunkParser<T>::parse_number_slow(const char*& p, const char* e, double& value) {
  const NumberResult r = parse_number_exact(p, e, false);
  if (r.status != NumberStatus::kOk || r.end >= e) return false;
  p = r.end;
  value = r.value;
  return true;
}

template bool ChunkParser<float>::read_rows_fast(uint64_t&);
template bool ChunkParser<double>::read_rows_fast(uint64_t&);

}  // namespace cntkio::ctf
