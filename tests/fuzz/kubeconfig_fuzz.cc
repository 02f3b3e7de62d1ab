// libFuzzer target: kubeconfig text. It must load or fail with a KubeError naming what is wrong;
// any other exception (a JSON/YAML type error, an out-of-range access) escapes as a crash here, as
// it would kill valleyctl or the operator at start-up with a message no one can act on.
#include "operator/kube/config.h"
#include "operator/kube/error.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  try {
    // A base directory that does not exist: relative certificate paths fail to read, cleanly.
    auto config = kube::parse_kubeconfig(fuzz::text_of(data, size), "/nonexistent-valley-fuzz");
    FUZZ_REQUIRE(!config.server.empty(), "a loaded kubeconfig must name a server");
  } catch (const kube::KubeError&) {
  }
  return 0;
}
