#include "config/data_files.hpp"

namespace cntkio::config_detail {

void data_files_from_config(const Config& section, std::string& file, std::vector<std::string>& more_files,
                            std::string& file_list) {
  file_list = section.get_string("fileList", "");
  if (!section.find_string("file") && !file_list.empty()) return;
  file = section.get_string("file");
  if (file.size() >= 2 && file.front() == '(' && file.back() == ')') {
    std::vector<std::string> files = section.get_array("file");
    if (files.empty()) throw section.error("file", "The array of data files is empty.");
    file = files[0];
    more_files.assign(files.begin() + 1, files.end());
  }
}

}  // namespace cntkio::config_detail
