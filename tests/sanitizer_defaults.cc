// Linked into the programs the tests start when the test build is sanitized (tests/CMakeLists.txt):
// such a program is often stopped by a signal, or started through mpirun and ssh, which hand it no
// environment, so its options are built in. AddressSanitizer still stops it at the first error;
// what a stopped process (or OpenMPI inside it) still holds is not reported as a leak. The unit
// tests do not link this: they keep leak detection.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
