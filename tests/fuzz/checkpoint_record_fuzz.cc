// libFuzzer target: the workload's latest.json as Valley reads it from the checkpoint store (written
// by user code, so anything). It parses or is rejected with a reason; an accepted record written
// back and read again is the same record.
#include "operator/storage/checkpoint_record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  std::string error;
  auto record = storage::parse_checkpoint_record(fuzz::text_of(data, size), &error);
  if (!record) {
    FUZZ_REQUIRE(!error.empty(), "a rejected record must say why");
    return 0;
  }
  FUZZ_REQUIRE(record->step >= 0 && record->world_size >= 0, storage::to_json(*record));
  std::string again_error;
  auto again = storage::parse_checkpoint_record(storage::to_json(*record), &again_error);
  FUZZ_REQUIRE(again.has_value(), again_error);
  FUZZ_REQUIRE(again->step == record->step && again->time == record->time && again->epoch == record->epoch &&
                   again->world_size == record->world_size && again->object == record->object,
               storage::to_json(*record) + " vs " + storage::to_json(*again));
  return 0;
}
