#include "formats/ctf/ctf_number.hpp"

namespace cntkio::ctf {

double power_of_ten(int exponent) {
  static const std::vector<double> table = [] {
    std::vector<double> t(1999);
    for (int i = -999; i <= 999; ++i)
      t[static_cast<size_t>(i + 999)] = std::pow(10.0, static_cast<double>(i));
    return t;
  }();
  return table[static_cast<size_t>(exponent + 999)];
}

NumberResult parse_number_exact(const char* p, const char* end, bool end_is_sequence_end) {
  enum class State { kInit, kSign, kInt, kPeriod, kFrac, kExp, kExpSign, kExpDigits };
  State state = State::kInit;
  bool negative = false;
  double n = 0, c = 0, d = 1;
  for (; p < end; ++p) {
    const char ch = *p;
    const bool digit = ch >= '0' && ch <= '9';
    const double dv = digit ? static_cast<double>(ch - '0') : 0.0;
    switch (state) {
      case State::kInit:
        if (digit) {
          n = dv;
          state = State::kInt;
        } else if (ch == '+' || ch == '-') {
          negative = ch == '-';
          state = State::kSign;
        } else {
          return {NumberStatus::kBadCharacter, p, 0};
        }
        break;
      case State::kSign:
        if (!digit) return {NumberStatus::kBadAfterSign, p, 0};
        n = dv;
        state = State::kInt;
        break;
      case State::kInt:
        if (digit) {
          n = n * 10 + dv;
        } else if (ch == '.') {
          state = State::kPeriod;
        } else if (ch == 'e' || ch == 'E') {
          c = negative ? -n : n;
          n = 0;
          state = State::kExp;
        } else {
          return {NumberStatus::kOk, p, negative ? -n : n};
        }
        break;
      case State::kPeriod:
        if (!digit) return {NumberStatus::kOk, p, negative ? -n : n};
        c = n;
        n = dv;
        d = 10;
        state = State::kFrac;
        break;
      case State::kFrac:
        if (digit) {
          n = n * 10 + dv;
          d = d * 10;
        } else if (ch == 'e' || ch == 'E') {
          c = c + n / d;
          if (negative) c = -c;
          state = State::kExp;
        } else {
          c = c + n / d;
          return {NumberStatus::kOk, p, negative ? -c : c};
        }
        break;
      case State::kExp:
        if (digit) {
          negative = false;
          n = dv;
          state = State::kExpDigits;
        } else if (ch == '+' || ch == '-') {
          negative = ch == '-';
          state = State::kExpSign;
        } else {
          return {NumberStatus::kBadAfterExponent, p, 0};
        }
        break;
      case State::kExpSign:
        if (!digit) return {NumberStatus::kBadAfterExponentSign, p, 0};
        n = dv;
        state = State::kExpDigits;
        break;
      case State::kExpDigits:
        if (!digit) return {NumberStatus::kOk, p, c * std::pow(10.0, negative ? -n : n)};
        n = n * 10 + dv;
        break;
    }
  }
  if (!end_is_sequence_end) return {NumberStatus::kFileTooShort, p, 0};
  switch (state) {
    case State::kInt:
    case State::kPeriod:
      return {NumberStatus::kOk, p, negative ? -n : n};
    case State::kFrac:
      c = c + n / d;
      return {NumberStatus::kOk, p, negative ? -c : c};
    case State::kExpDigits:
      return {NumberStatus::kOk, p, c * std::pow(10.0, negative ? -n : n)};
    default:
      return {NumberStatus::kExhausted, p, 0};
  }
}

}  // namespace cntkio::ctf
