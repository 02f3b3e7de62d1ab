#include "cmd/valleyctl/table.h"

#include <sstream>

#include <gtest/gtest.h>

namespace valley::ctl {
namespace {

std::string printed(const Table& t) {
  std::ostringstream out;
  t.print(out);
  return out.str();
}

TEST(Table, EachColumnIsAsWideAsItsWidestCellAndTheLastIsNotPadded) {
  Table t({"NAMESPACE", "NAME", "PHASE"});
  t.add({"valley-demo-real", "real-train", "Succeeded"});
  t.add({"a", "b", "Running"});
  EXPECT_EQ(printed(t),
            "NAMESPACE         NAME        PHASE\n"
            "valley-demo-real  real-train  Succeeded\n"
            "a                 b           Running\n");
}

TEST(Table, AWideCharacterTakesOneColumnAndAShortRowEndsEarly) {
  Table t({"A", "B"});
  t.add({"4 → 6", "x"});
  t.add({"y"});
  EXPECT_EQ(printed(t),
            "A      B\n"
            "4 → 6  x\n"
            "y\n");
}

}  // namespace
}  // namespace valley::ctl
