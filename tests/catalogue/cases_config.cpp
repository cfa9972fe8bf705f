// Catalogue: the CNTK config language (spec config.md). Every error names the key path and the file, line
// and column of the offending text.
#include <gtest/gtest.h>

#include <cerrno>

#include "catalogue/catalogue.hpp"
#include "cntkio/config.hpp"

namespace cntkio::catalogue {
namespace {

using Action = std::function<void(const Config&, Outcome&)>;

Case text_case(std::string name, std::string text, Action action, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [text = std::move(text), action = std::move(action)](const std::string& dir) {
    return capture(dir, [&](Outcome& out) { action(Config::from_text(text, "cfg.cntk"), out); });
  };
  c.expect = std::move(expect);
  return c;
}

Action get(std::string key) {
  return [key = std::move(key)](const Config& c, Outcome& out) { out.data = c.get_string(key); };
}
Action validate() {
  return [](const Config& c, Outcome&) { c.validate_variables(); };
}

// "a0 = <first>" and a_k = `fan` references $a_{k-1}$ on one line, for k = 1..levels.
std::string doubling_chain(const std::string& first, int levels, int fan) {
  std::string text = "a0 = " + first + "\n";
  for (int k = 1; k <= levels; ++k) {
    text += "a" + std::to_string(k) + " = ";
    for (int i = 0; i < fan; ++i) text += "$a" + std::to_string(k - 1) + "$";
    text += "\n";
  }
  return text;
}

}  // namespace

std::vector<Case> config_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };

  // ---- brackets and records ----
  add(text_case(
      "config_unmatched_closer", "a = [ b = 1 )\n", get("a"),
      config_error("unmatched bracket found in parameters: ')' where ']' is expected to close the '[' "
                   "at line 1, column 5",
                   "global", "cfg.cntk", 1, 13)));
  add(text_case("config_unclosed_block", "x = 1\na = [ b = 1\n", get("x"),
                config_error("no closing ] found in parameters", "global", "cfg.cntk", 2, 5)));
  add(text_case("config_unclosed_quote", "a = \"xyz\n", get("a"),
                config_error("no closing \" found in parameters", "global", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_unclosed_nested_block", "r = [\n  input = [ f = [ dim = 3 ]\n]\n",
      [](const Config& c, Outcome&) { c.get_block("r"); },
      config_error("no closing ] found in parameters", "global", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_unmatched_in_late_block", "r = [ x = (1:2] ]\n",
      [](const Config& c, Outcome&) { c.get_block("r"); },
      config_error("unmatched bracket found in parameters: ']' where ')' is expected", "global", "cfg.cntk",
                   1, 15)));
  add(text_case("config_no_value", "a =\n", get("a"),
                config_error("ParseValue: No value given for 'a'.", "global.a", "cfg.cntk", 1, 1)));
  add(text_case(
      "config_no_value_in_block", "r = [\n  dim =\n]\n", [](const Config& c, Outcome&) { c.get_block("r"); },
      config_error("ParseValue: No value given for 'dim'.", "global.r.dim", "cfg.cntk", 2, 3)));

  // ---- line ends, BOMs, NUL ----
  add(text_case("config_cr_only_line_ends", "a = 1\rb = 2\r", get("a"),
                config_error("fgets: malformed text file, CR without LF", "", "cfg.cntk", 1, 6)));
  add(text_case("config_cr_only_on_line_3", "a = 1\r\nb = 2\nc = 3\rd = 4\n", get("a"),
                config_error("fgets: malformed text file, CR without LF", "", "cfg.cntk", 3, 6)));
  add(text_case("config_crlf_is_fine", "a = 1\r\nb = two words\r\n", get("b"), ok("two words")));
  add(text_case("config_bom_on_every_line",
                "\xEF\xBB\xBF"
                "a = 1\n\xEF\xBB\xBF"
                "b = 2\n",
                get("b"), ok("2")));
  add(text_case(
      "config_bom_then_bad_value",
      "\xEF\xBB\xBF"
      "n = x\n",
      [](const Config& c, Outcome&) { c.get_uint("n", 0); },
      config_error("ConfigValue (uint64_t): invalid input string 'x'", "global.n", "cfg.cntk", 1, 8)));
  add(text_case(
      "config_nul_in_number",
      std::string("n = 1\0"
                  "2\n",
                  8),
      [](const Config& c, Outcome&) { c.get_uint("n", 0); },
      config_error("ConfigValue (uint64_t): invalid input string", "global.n", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_nul_in_string_kept", std::string("s = a\0b\n", 8),
      [](const Config& c, Outcome& out) { out.data = std::to_string(c.get_string("s").size()); }, ok("3")));

  // ---- $var$ ----
  add(text_case("config_var_cycle_self", "a = $a$\n", get("a"),
                config_error("cyclic variable reference: $a$ -> $a$", "global.a", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_var_cycle_three", "a = $b$\nb = x$c$\nc = $a$\n", get("a"),
      config_error("cyclic variable reference: $a$ -> $b$ -> $c$ -> $a$", "global.c", "cfg.cntk", 3, 5)));
  add(text_case(
      "config_var_cycle_found_by_validation", "a = $b$\nb = $c$\nc = $a$\n", validate(),
      config_error("cyclic variable reference: $b$ -> $c$ -> $a$ -> $b$", "global.a", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_var_cycle_through_parent", "x = $r$\nr = [ y = $x$ ]\n",
      [](const Config& c, Outcome&) { c.get_block("r").get_string("y"); },
      config_error("cyclic variable reference: $r$ -> $x$ -> $r$", "global.x", "cfg.cntk", 1, 5)));
  add(text_case("config_var_unknown", "a = 1\nb = $nope$/x\n", get("b"),
                config_error("No variable found with the name nope.", "global.b", "cfg.cntk", 2, 5)));
  add(text_case("config_var_default_is_no_value", "v = default\nb = $v$\n", get("b"),
                config_error("No variable found with the name v.", "global.b", "cfg.cntk", 2, 5)));
  add(text_case("config_var_double_dollar", "a = x$$y\n", get("a"),
                config_error("$$ is not allowed", "global.a", "cfg.cntk", 1, 6)));
  add(text_case("config_var_multiline_value", "a = $b$\nb = [\n x = 1\n]\n", get("a"),
                config_error("Newline characters are not allowed in the value of a variable", "global.a",
                             "cfg.cntk", 1, 5)));
  // a4 is 16 000 000 bytes; a5 would be twice that.
  add(text_case(
      "config_var_expansion_too_large", doubling_chain(std::string(1000000, 'x'), 6, 2), get("a6"),
      config_error("the value expands to more than 16777216 bytes at $a4$", "global.a5", "cfg.cntk", 6, 10)));
  // 400 references to an empty a0 on a1's line, 400 to a1 on a2's: the 100 001st look-up is the 151st $a0$ of
  // the 250th a1 (each a1 costs 401 look-ups: 249 * 401 = 99849, + 1 for the a1 itself, + 151).
  add(text_case("config_var_too_many_references", doubling_chain("\"\"", 2, 400), get("a2"),
                config_error("more than 100000 $var$ references resolved for one value at $a0$", "global.a1",
                             "cfg.cntk", 2, 606)));
  // a_k = $a_{k-1}$ for 5000 levels overflowed the stack (SIGSEGV). Resolving a4999 pushes a4999..a4800
  // (200 variables); the 201st, $a4799$, is referred to on a4800's line (line 4801, column 9).
  add(text_case("config_var_chain_too_deep", doubling_chain("x", 4999, 1), get("a4999"),
                config_error("$var$ references chain more than 200 deep at $a4799$ (starting from $a4999$)",
                             "global.a4800", "cfg.cntk", 4801, 9)));
  add(text_case("config_var_chain_at_the_limit", doubling_chain("x", 199, 1), get("a199"), ok("x")));
  add(text_case("config_var_lone_dollar_is_literal", "a = 5$ and $x\n", get("a"), ok("5$ and $x")));

  // ---- arrays ----
  add(text_case(
      "config_repeat_count_not_a_number", "a = (x*abc)\n",
      [](const Config& c, Outcome&) { c.get_array("a"); },
      config_error("ConfigValue (int): invalid repeat count 'abc'", "global.a", "cfg.cntk", 1, 8)));
  add(text_case(
      "config_repeat_count_missing", "a = (x*)\n", [](const Config& c, Outcome&) { c.get_array("a"); },
      config_error("missing repeat count after '*'", "global.a", "cfg.cntk", 1, 7)));
  add(text_case(
      "config_repeat_count_overflow", "a = (x*99999999999)\n",
      [](const Config& c, Outcome&) { c.get_array("a"); },
      config_error("ConfigValue (int): invalid repeat count '99999999999'", "global.a", "cfg.cntk", 1, 8)));
  add(text_case(
      "config_repeat_count_huge", "a = (x*2000000000)\n", [](const Config& c, Outcome&) { c.get_array("a"); },
      config_error("makes the array longer than 1000000 elements", "global.a", "cfg.cntk", 1, 8)));
  add(text_case(
      "config_repeat_count_negative_gives_nothing", "a = (x*-5:y)\n",
      [](const Config& c, Outcome& out) { out.data = std::to_string(c.get_array("a").size()); }, ok("1")));
  add(text_case(
      "config_array_element_not_block", "d = ([x=1]:y)\n",
      [](const Config& c, Outcome&) { c.get_block_array("d"); },
      config_error("array element 1 of 'd' is not a block", "global.d[1]", "cfg.cntk", 1, 12)));

  // ---- typed values ----
  add(text_case(
      "config_bool_bad", "flag = yes\n", [](const Config& c, Outcome&) { c.get_bool("flag", false); },
      config_error("boolean argument expected, got 'yes'", "global.flag", "cfg.cntk", 1, 8)));
  add(text_case(
      "config_uint_trailing_text", "r = [\n  n = 12abc\n]\n",
      [](const Config& c, Outcome&) { c.get_block("r").get_uint("n", 0); },
      config_error("invalid input string '12abc'", "global.r.n", "cfg.cntk", 2, 7)));
  add(text_case(
      "config_uint_overflow", "n = 99999999999999999999\n",
      [](const Config& c, Outcome&) { c.get_uint("n", 0); },
      config_error("invalid input string '99999999999999999999'", "global.n", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_uint_minus_one_wraps", "n = -1\n",
      [](const Config& c, Outcome& out) { out.data = std::to_string(c.get_uint("n", 0)); },
      ok("18446744073709551615")));
  add(text_case(
      "config_int_with_exponent", "n = 1e3\n", [](const Config& c, Outcome&) { c.get_int("n", 0); },
      config_error("ConfigValue (int64_t): invalid input string '1e3'", "global.n", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_double_two_points", "x = 1.5.5\n", [](const Config& c, Outcome&) { c.get_double("x", 0); },
      config_error("ConfigValue (double): invalid input string '1.5.5'", "global.x", "cfg.cntk", 1, 5)));
  add(text_case(
      "config_double_msvc_infinity", "x = 1.#INF\n",
      [](const Config& c, Outcome& out) { out.data = std::to_string(c.get_double("x", 0)); }, ok("inf")));
  add(text_case(
      "config_required_missing", "# only a comment\na = 1\n", get("b"),
      config_error("configparameters: required parameter missing: global:b", "global.b", "cfg.cntk", 2, 1)));
  add(text_case(
      "config_required_empty_after_resolution", "e = \"\"\nb = $e$\n", get("b"),
      config_error("configparameters: required parameter missing: global:b", "global.b", "cfg.cntk", 1, 1)));
  add(text_case(
      "config_not_a_block", "a = 5\n", [](const Config& c, Outcome&) { c.get_block("a"); },
      config_error("the value of 'a' is not a block", "global.a", "cfg.cntk", 1, 5)));
  add(text_case("config_include_with_variable", "include=$x$.cntk\n", get("a"),
                config_error("not supported in \"include\" statements", "", "cfg.cntk", 1, 1)));
  add(text_case(
      "config_override_located", "a = [ n = 1 ]\n",
      [](const Config&, Outcome&) {
        Config::from_text("a = [ n = 1 ]\n", "cfg.cntk", {"a=[ n = z ]"}).get_block("a").get_uint("n", 0);
      },
      config_error("invalid input string 'z'", "global.a.n", "<override 1>", 1, 9)));

  // Every byte value inside a value: `a = x<b>y` read back with get_string("a").
  {
    Case family;
    family.name = "config_every_byte_in_a_value";
    family.check = [](const std::string& dir) {
      for (int b = 0; b < 256; ++b) {
        const char ch = static_cast<char>(b);
        std::string text = "a = x";
        text += ch;
        text += "y\n";
        Outcome o = capture(
            dir, [&](Outcome& out) { out.data = Config::from_text(text, "cfg.cntk").get_string("a"); });
        // What the spec's record rules give for this byte.
        Expect e;
        if (ch == '\r') {
          e = config_error("CR without LF", "", "cfg.cntk", 1, 6);
        } else if (ch == '[' || ch == '{' || ch == '(' || ch == '"') {
          const char closer = ch == '[' ? ']' : ch == '{' ? '}' : ch == '(' ? ')' : '"';
          e = config_error(std::string("no closing ") + closer + " found in parameters", "global", "cfg.cntk",
                           1, 6);
        } else if (ch == '\n' || ch == ',' || ch == ';') {
          e = ok("x");  // a record separator: `y` becomes a flag of its own
        } else {
          e = ok(std::string("x") + ch + "y");
        }
        SCOPED_TRACE("byte " + std::to_string(b) + ": " + o.what);
        ASSERT_EQ(to_string(o.kind), std::string(to_string(e.kind)));
        if (e.kind == Kind::kNone) {
          EXPECT_EQ(o.data, *e.data);
        } else {
          EXPECT_NE(o.what.find(e.text), std::string::npos);
          EXPECT_EQ(o.key_path, e.key_path);
          EXPECT_EQ(o.line, e.line);
          EXPECT_EQ(o.column, e.column);
        }
      }
    };
    add(std::move(family));
  }
  return cases;
}

}  // namespace cntkio::catalogue
