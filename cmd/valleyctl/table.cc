#include "cmd/valleyctl/table.h"

#include <algorithm>

namespace valley::ctl {
namespace {

// Characters, not bytes: a status message may hold UTF-8 ("→"), which takes one column.
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<size_t> width;
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], columns(row[i]));
    }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - columns(row[i]) + 2, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace valley::ctl
