// The short seeded version of the fuzz campaign, for `make test` (g++, in the unit and sanitized
// builds): a fuzz target's LLVMFuzzerTestOneInput runs over its committed seed corpus, then over a
// fixed number of mutations of it drawn from a fixed seed (bit flips, byte changes, inserts,
// deletes, repeats, splices and tokens parsers care about). No coverage guidance: that is
// `make fuzz` (libFuzzer, clang). The same seed gives the same inputs, so a finding replays; the
// input that failed is written to ./<target>-failure before the process dies.
//   <target>_replay [--mutations=N] [--seed=S] CORPUS_DIR...
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input running now, for the signal handler (it may only write what is already in memory).
const std::string* g_current = nullptr;
char g_failure_path[512];

extern "C" void on_fatal(int sig) {
  if (g_current) {
    int fd = ::open(g_failure_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
      (void)ignored;
      ::close(fd);
    }
    const char msg[] = "replay: the failing input is in ";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    ignored = ::write(2, g_failure_path, std::strlen(g_failure_path));
    ignored = ::write(2, "\n", 1);
    (void)ignored;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void run(const std::string& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_current = nullptr;
}

// Byte strings parsers of JSON, YAML, quantities, durations and times treat specially.
const std::vector<std::string> kTokens = {"{", "}", "[", "]", "\"", ":", ",", "null", "true", "-", "0", "-1", ".",
                                          "9223372036854775808", "1e309", "\\u0000", "\n", "- ", ": ", "&a", "*a", "!!",
                                          "T", "Z", "+", "m", "Ki", "h", "500m", "\xff", "\xc3\x28"};

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto below = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(below(4));
  for (int e = 0; e < edits; ++e) {
    switch (below(7)) {
      case 0:  // flip a bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1:  // set a byte
        if (!s.empty()) s[below(s.size())] = static_cast<char>(below(256));
        break;
      case 2:  // insert a byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(below(s.size() + 1)), static_cast<char>(below(256)));
        break;
      case 3:  // delete a range
        if (!s.empty()) {
          size_t at = below(s.size());
          s.erase(at, 1 + below(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 4:  // repeat a range
        if (!s.empty() && s.size() < (size_t{1} << 16)) {
          size_t at = below(s.size());
          size_t n = 1 + below(std::min<size_t>(64, s.size() - at));
          s.insert(at, s.substr(at, n));
        }
        break;
      case 5: {  // splice: this one's head, another's tail
        const std::string& other = corpus[below(corpus.size())];
        s = s.substr(0, below(s.size() + 1)) + other.substr(below(other.size() + 1));
        break;
      }
      default:  // a token
        s.insert(below(s.size() + 1), kTokens[below(kTokens.size())]);
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 20000;
  uint64_t seed = 1;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--mutations=", 0) == 0) {
      mutations = std::strtol(a.c_str() + 12, nullptr, 10);
    } else if (a.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    } else {
      std::error_code ec;
      for (const auto& f : std::filesystem::directory_iterator(a, ec)) {
        if (!f.is_regular_file()) continue;
        std::string bytes(static_cast<size_t>(f.file_size()), '\0');
        std::ifstream in(f.path(), std::ios::binary);
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        corpus.push_back(std::move(bytes));
      }
      if (ec) {
        std::fprintf(stderr, "replay: cannot read %s: %s\n", a.c_str(), ec.message().c_str());
        return 2;
      }
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "replay: no seed inputs (give the corpus directory)\n");
    return 2;
  }
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  std::snprintf(g_failure_path, sizeof g_failure_path, "%s-failure", name.c_str());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal);
  for (const auto& input : corpus) run(input);
  std::mt19937_64 rng(seed);
  for (long k = 0; k < mutations; ++k) run(mutate(corpus[rng() % corpus.size()], corpus, rng));
  std::printf("replay: %s ran %zu seed inputs and %ld mutations (seed %llu), no finding\n", name.c_str(), corpus.size(), mutations,
              static_cast<unsigned long long>(seed));
  return 0;
}
