// Names the calling thread (as `top -H`, `ps -L`, perf and /proc/<pid>/task/*/comm show it), so a
// profile or a per-thread CPU count says which part of the operator spent it. Linux keeps 15
// characters: longer names are cut. Best effort: a failure changes nothing else.
#pragma once

#include <string_view>

namespace valley::kube {

void name_this_thread(std::string_view name);

}  // namespace valley::kube
