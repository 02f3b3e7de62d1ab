#include "cmd/valleyctl/table.h"

#include <algorithm>

#include "operator/text.h"

namespace valley::ctl {

void Table::print(std::ostream& out) const {
  std::vector<size_t> width;
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], utf8_length(row[i]));
    }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - utf8_length(row[i]) + 2, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace valley::ctl
