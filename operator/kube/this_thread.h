// The calling thread, for telling which part of the operator spends the CPU. name_this_thread names
// it (as `top -H`, `ps -L`, perf and /proc/<pid>/task/*/comm show it; Linux keeps 15 characters:
// longer names are cut; best effort: a failure changes nothing else). thread_cpu_seconds is the CPU
// time it has used so far (user + system), for a step's CPU against its wall time.
#pragma once

#include <string_view>

namespace valley::kube {

void name_this_thread(std::string_view name);
double thread_cpu_seconds();

}  // namespace valley::kube
