// Lazy `$name$` substitution (CNTK's ResolveVariables / ResolveVariablesInSingleLine), with cycle detection.
#include <string>
#include <vector>

#include "config/scope.hpp"

namespace cntkio::config_detail {

namespace {

// Bounds on one resolution, so that a hostile config (a_k = $a_{k-1}$$a_{k-1}$, thirty levels deep) fails
// with a located error instead of running for hours or exhausting memory. CNTK has no such bounds; no real
// config comes near them.
constexpr size_t kMaxResolvedBytes = 16u << 20;
constexpr size_t kMaxLookups = 100000;
// Resolution recurses once per variable in a chain ($a$ names $b$, which names $c$, ...): the depth bound
// keeps a hostile chain of thousands from overflowing the stack. Real configs chain a handful.
constexpr size_t kMaxChainDepth = 200;

// A name ends at '$' or at any of these; if the character found is not '$', the opening '$' is literal.
constexpr std::string_view kNameEnders = "$,/<>?;':\"[]{}\\|!@#%^&*()+=~` \t\n";

bool starts_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

class Resolver {
 public:
  /// Marks `key` of `scope` as being resolved (cycle detection).
  void enter(const Scope& scope, std::string_view key) {
    stack_.push_back(Frame{&scope, lowercase(key), std::string(key)});
  }

  /// Resolves a whole text: with LFs, each non-empty line is resolved and followed by LF; without, the text
  /// is one line and gets no LF.
  SourceText resolve_text(const Scope& scope, const SourceText& text) {
    const std::string_view chars = text.view();
    if (chars.find('\n') == std::string_view::npos) return resolve_line(scope, text, 0, chars.size());
    SourceText out;
    size_t pos = 0;
    while (pos < chars.size()) {
      size_t end = chars.find('\n', pos);
      if (end == std::string_view::npos) end = chars.size();
      if (end > pos) {
        out.append(resolve_line(scope, text, pos, end));
        out.append("\n", text.origin_at(end));
      }
      pos = end + 1;
    }
    return out;
  }

 private:
  struct Frame {
    const Scope* scope;
    std::string key_lower;
    std::string key;
  };

  std::string key_path(const Scope& scope) const {
    if (stack_.empty()) return scope.path;
    return stack_.back().scope->path + "." + stack_.back().key;
  }

  SourceText resolve_line(const Scope& scope, const SourceText& text, size_t begin, size_t end) {
    // Comments are stripped again, with the same first-'#' rule as when reading the file.
    size_t keep_begin;
    size_t keep_end;
    strip_comments(text.view().substr(begin, end - begin), keep_begin, keep_end);
    const SourceText line = text.slice(begin + keep_begin, begin + keep_end);
    const std::string& s = line.str();

    SourceText out;
    size_t copied = 0;
    size_t dollar = s.find('$');
    while (dollar != std::string::npos) {
      if (dollar + 1 < s.size() && !starts_name(s[dollar + 1])) {
        if (s[dollar + 1] == '$') {
          throw_at(line.origin_at(dollar),
                   "$$ is not allowed. Parsing of string failed: " + scope.path + ":" + s, key_path(scope));
        }
        dollar = s.find('$', dollar + 2);
        continue;
      }
      size_t close = s.find_first_of(kNameEnders, dollar + 1);
      if (close == std::string::npos || s[close] != '$') {
        dollar = s.find('$', dollar + 1);
        continue;
      }
      std::string name = s.substr(dollar + 1, close - dollar - 1);
      SourceText value = lookup(scope, name, line, dollar);
      if (value.view().find('\n') != std::string_view::npos) {
        throw_at(line.origin_at(dollar),
                 "Newline characters are not allowed in the value of a variable which is resolved using "
                 "$varName$ feature (variable '" +
                     name + "')",
                 key_path(scope));
      }
      out.append(line, copied, dollar);
      out.append(value);
      if (out.size() > kMaxResolvedBytes) {
        throw_at(line.origin_at(dollar),
                 "the value expands to more than " + std::to_string(kMaxResolvedBytes) + " bytes at $" +
                     name + "$ (exponential $var$ expansion?)",
                 key_path(scope));
      }
      copied = close + 1;
      dollar = s.find('$', close + 1);  // the inserted text is not scanned again
    }
    out.append(line, copied, s.size());
    return out;
  }

  /// The resolved value of variable `name` as seen from `scope`; `line[at]` is the '$' referring to it.
  SourceText lookup(const Scope& scope, const std::string& name, const SourceText& line, size_t at) {
    if (++lookups_ > kMaxLookups) {
      throw_at(line.origin_at(at),
               "more than " + std::to_string(kMaxLookups) + " $var$ references resolved for one value at $" +
                   name + "$ (exponential $var$ expansion?)",
               key_path(scope));
    }
    for (const Scope* candidate = &scope; candidate != nullptr; candidate = candidate->parent.get()) {
      auto it = candidate->entries.find(name);
      if (it == candidate->entries.end()) continue;
      if (it->second.str() == "default") break;  // "use the default": there is none for a variable

      const std::string lower = lowercase(name);
      for (size_t i = 0; i < stack_.size(); ++i) {
        if (stack_[i].scope != candidate || stack_[i].key_lower != lower) continue;
        std::string chain;
        for (size_t j = i; j < stack_.size(); ++j) chain += "$" + stack_[j].key + "$ -> ";
        chain += "$" + name + "$";
        throw_at(line.origin_at(at), "cyclic variable reference: " + chain, key_path(scope));
      }
      if (stack_.size() >= kMaxChainDepth) {
        throw_at(line.origin_at(at),
                 "$var$ references chain more than " + std::to_string(kMaxChainDepth) + " deep at $" + name +
                     "$ (starting from $" + stack_.front().key + "$)",
                 key_path(scope));
      }
      stack_.push_back(Frame{candidate, lower, it->first});
      SourceText value = resolve_text(*candidate, it->second);
      stack_.pop_back();
      return value;
    }
    throw_at(line.origin_at(at),
             "No variable found with the name " + name + ". Parsing of string failed: " + scope.path + ":" +
                 line.str(),
             key_path(scope));
  }

  std::vector<Frame> stack_;
  size_t lookups_ = 0;
};

}  // namespace

SourceText resolve_variables(const Scope& scope, std::string_view key, const SourceText& text) {
  Resolver resolver;
  if (!key.empty()) resolver.enter(scope, key);
  return resolver.resolve_text(scope, text);
}

}  // namespace cntkio::config_detail
