// Error texts: what() stays a whole, printable C string whatever bytes the input put in the message.
#include "cntkio/errors.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace cntkio;

TEST(ErrorText, ControlBytesFromTheInputAreEscapedSoTheLocationIsNotCutOff) {
  SourceLocation where;
  where.file = "l.mlf";
  where.byte_offset = 40;
  const std::string state("s\0x\x1b", 4);
  const FormatError error("Offset '40': frame range state '" + state + "' is not found in the statelist",
                          where);
  EXPECT_STREQ(error.what(),
               "Offset '40': frame range state 's\\x00x\\x1b' is not found in the statelist "
               "[file 'l.mlf', byte offset 40]");
  // cntk_text() keeps the bytes as they were (CNTK's text, compared as is).
  EXPECT_EQ(error.cntk_text().size(), std::string("Offset '40': frame range state '").size() + 4 +
                                          std::string("' is not found in the statelist").size());
  // TAB and LF are kept; text without control bytes is unchanged.
  EXPECT_STREQ(Error("a\tb\nc").what(), "a\tb\nc");
  EXPECT_STREQ(ConfigError(std::string("bad \r value", 11), "r.x", "c.cntk", 2, 3).what(),
               "c.cntk:2:3: bad \\x0d value (key 'r.x')");
}

// A URL's password is not repeated in messages (logs, CI output); the path itself stays as given.
TEST(ErrorText, AUrlsPasswordIsNotShown) {
  const IoError io("cannot open", "https://alice:s3cr3t@example.com:8443/d/a.ctf?x=1", EIO);
  EXPECT_EQ(std::string(io.what()).find("s3cr3t"), std::string::npos) << io.what();
  EXPECT_NE(std::string(io.what()).find("https://alice:***@example.com:8443/d/a.ctf?x=1"), std::string::npos)
      << io.what();
  EXPECT_EQ(io.path(), "https://alice:s3cr3t@example.com:8443/d/a.ctf?x=1");
  SourceLocation where;
  where.file = "http://bob:pw@host/x.ctf";
  EXPECT_EQ(where.describe(), "[file 'http://bob:***@host/x.ctf']");
  where.file = "http://host/a@b:c";  // an '@' after the host is part of the path
  EXPECT_EQ(where.describe(), "[file 'http://host/a@b:c']");
  where.file = "/data/user:name@x.ctf";  // not a URL
  EXPECT_EQ(where.describe(), "[file '/data/user:name@x.ctf']");
}
