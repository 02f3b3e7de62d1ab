// A table printed as kubectl prints one: each column as wide as its widest cell, columns two spaces
// apart, the last column not padded. Cells are whole strings, so a long namespace or name widens
// its column instead of running into the next one. Widths count characters, not bytes (a status
// message may hold "→").
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace valley::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // The header and every row added; a row shorter than the header leaves its last cells empty.
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace valley::ctl
