# The fuzz targets (tests/fuzz/<name>_fuzz.cc), one list for the libFuzzer build (tests/fuzz) and
# the seeded replays of make test (tests/CMakeLists.txt); tests/fuzz/run.sh reads it too.
set(VALLEY_FUZZERS watch_decoder spec seed yaml_json pricing_policy tenant kubeconfig checkpoint_record strings task_status prom_query status_text s3_listing sigv4_path)
