// Catalogue: HTK feature lists (SCP) and MLF label files (spec htk.md). SCP errors name the list's line;
// MLF errors name the byte offset of the offending line (CNTK's "Offset 'N': ..." texts).
#include <cerrno>

#include "catalogue/catalogue.hpp"
#include "cntkio/htk.hpp"

namespace cntkio::catalogue {
namespace {

Case mlf(std::string name, std::string content, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [content = std::move(content)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      MlfOptions options;
      options.name = "labels";
      options.mlf_files = {write_file(dir, "data.mlf", content)};
      options.label_dim = 10;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      make_mlf_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

Case scp(std::string name, std::string content, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [content = std::move(content)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      HtkFeatureOptions options;
      options.name = "features";
      options.scp_file = write_file(dir, "data.scp", content);
      options.dim = 3;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      make_htk_feature_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

}  // namespace

std::vector<Case> htk_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };
  add(mlf("mlf_empty_file", "", format_error_at("Input file is empty", "data.mlf", 0)));
  add(mlf("mlf_missing_header", "\"a.rec\"\n0 100000 s 1\n.\n",
          format_error_at("Expected MLF header was not found.", "data.mlf", 0)));
  add(mlf("mlf_start_not_a_number", "#!MLF!#\n\"a.rec\"\nx 100000 s 1\n.\n",
          format_error_at("Offset '16': cannot parse start frame of range.", "data.mlf", 16)));
  add(mlf("mlf_one_column", "#!MLF!#\n\"a.rec\"\n100000\n.\n",
          format_error_at("Offset '16': do not support frame range format with less than two columns.",
                          "data.mlf", 16)));
  add(scp("scp_no_frame_range", "a.feat=x.htk\n",
          format_error("parsedpath: this mode requires an input script with start and end frames given",
                       "data.scp", 1, 0, std::nullopt)));
  add(scp("scp_start_after_end", "a.feat=x.htk[0,2]\nb.feat=x.htk[5,2]\n",
          format_error("open: start frame 5 > end frame 2 in 'x.htk'", "data.scp", 2, 0, std::nullopt)));
  add(scp("scp_garbage_after_range", "a.feat=x.htk[0,2]zz\n",
          format_error("parsedpath: malformed path 'a.feat=x.htk[0,2]zz'", "data.scp", 1, 0, std::nullopt)));
  {
    Case c;
    c.name = "scp_missing_list";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        HtkFeatureOptions options;
        options.name = "features";
        options.scp_file = dir + "/none.scp";
        options.dim = 3;
        make_htk_feature_deserializer(options);
      });
    };
    c.expect = io_error("", "none.scp", ENOENT);
    add(std::move(c));
  }
  return cases;
}

}  // namespace cntkio::catalogue
