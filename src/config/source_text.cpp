#include "config/source_text.hpp"

#include <algorithm>

namespace cntkio::config_detail {

namespace {
Origin advanced(const Origin& origin, size_t columns) {
  if (!origin.known()) return origin;
  Origin out = origin;
  out.column += columns;
  return out;
}
}  // namespace

SourceText::SourceText(std::string chars) : chars_(std::move(chars)) {}

SourceText SourceText::from_source(std::string_view content, const std::shared_ptr<const std::string>& file,
                                   uint64_t line, uint64_t column) {
  SourceText text;
  size_t line_start = 0;
  while (line_start < content.size()) {
    size_t lf = content.find('\n', line_start);
    size_t line_end = lf == std::string_view::npos ? content.size() : lf + 1;
    text.append(content.substr(line_start, line_end - line_start - (lf == std::string_view::npos ? 0 : 1)),
                Origin{file, line, column});
    if (lf != std::string_view::npos) {
      text.append("\n", Origin{file, line, column + (lf - line_start)});
    }
    line_start = line_end;
    ++line;
    column = 1;
  }
  return text;
}

std::ptrdiff_t SourceText::mark_index(size_t pos) const {
  auto it = std::upper_bound(marks_.begin(), marks_.end(), pos,
                             [](size_t p, const Mark& mark) { return p < mark.at; });
  return (it - marks_.begin()) - 1;
}

Origin SourceText::origin_at(size_t pos) const {
  std::ptrdiff_t index = mark_index(pos);
  if (index < 0) return {};
  const Mark& mark = marks_[static_cast<size_t>(index)];
  return advanced(mark.origin, pos - mark.at);
}

void SourceText::add_mark(size_t at, const Origin& origin) {
  if (!marks_.empty()) {
    // Skip marks that the previous run already implies.
    Mark& last = marks_.back();
    Origin implied = advanced(last.origin, at - last.at);
    if (implied.file == origin.file &&
        (!origin.known() || (implied.line == origin.line && implied.column == origin.column))) {
      return;
    }
    if (last.at == at) {
      last.origin = origin;
      return;
    }
  } else if (!origin.known()) {
    return;  // nothing known before either
  }
  marks_.push_back(Mark{at, origin});
}

SourceText SourceText::slice(size_t begin, size_t end) const {
  SourceText out;
  out.append(*this, begin, end);
  return out;
}

void SourceText::append(const SourceText& other, size_t begin, size_t end) {
  end = std::min(end, other.size());
  if (begin >= end) return;
  const size_t base = chars_.size();
  std::ptrdiff_t index = other.mark_index(begin);
  add_mark(base, index < 0 ? Origin{}
                           : advanced(other.marks_[static_cast<size_t>(index)].origin,
                                      begin - other.marks_[static_cast<size_t>(index)].at));
  for (size_t i = static_cast<size_t>(index + 1); i < other.marks_.size() && other.marks_[i].at < end; ++i) {
    add_mark(base + (other.marks_[i].at - begin), other.marks_[i].origin);
  }
  chars_.append(other.chars_, begin, end - begin);
}

void SourceText::append(std::string_view chars, const Origin& origin) {
  if (chars.empty()) return;
  add_mark(chars_.size(), origin);
  chars_.append(chars);
}

}  // namespace cntkio::config_detail
