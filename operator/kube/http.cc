#include "operator/kube/http.h"

#include <curl/curl.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <spdlog/spdlog.h>

#include <thread>

#include "operator/kube/error.h"

namespace valley::kube {
namespace {

// curl_global_init is not thread-safe; run it once before any handle exists.
struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};
void ensure_curl_global() { static CurlGlobal global; }

// curl has OpenSSL free a connection's read and write buffers whenever they are empty
// (SSL_MODE_RELEASE_BUFFERS): each read of a busy watch stream then allocated a fresh 16 KiB
// buffer, and glibc consolidated the thread's freed small chunks for every such allocation. Valley
// holds a few dozen connections: their buffers stay.
CURLcode keep_tls_buffers(CURL*, void* ssl_ctx, void*) {
  SSL_CTX_clear_mode(static_cast<SSL_CTX*>(ssl_ctx), SSL_MODE_RELEASE_BUFFERS);
  return CURLE_OK;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  std::string_view line(data, size * count);
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string name = lower(std::string(line.substr(0, colon)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    if (name == "date") response->date_received = std::chrono::steady_clock::now();
    response->headers[name] = std::string(value);
  } else if (line.rfind("HTTP/", 0) == 0) {
    response->headers.clear();  // a new response (after 100-continue or a redirect)
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

struct StreamState {
  const std::function<bool(std::string_view)>* on_chunk = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  HttpResponse* response = nullptr;
  CURL* curl = nullptr;
  bool stopped = false;
};

size_t on_stream(char* data, size_t size, size_t count, void* user) {
  auto* st = static_cast<StreamState*>(user);
  size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {  // an error answer: keep it whole for the caller
    st->response->body.append(data, n);
    return n;
  }
  if (!(*st->on_chunk)(std::string_view(data, n))) {
    st->stopped = true;
    return 0;  // makes curl abort the transfer
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<StreamState*>(user);
  if (st->cancel != nullptr && st->cancel->load()) {
    st->stopped = true;
    return 1;
  }
  return 0;
}

void set_blob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{};
  blob.data = const_cast<char*>(pem.data());
  blob.len = pem.size();
  blob.flags = CURL_BLOB_COPY;
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

struct HttpClient::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  Handle() : curl(curl_easy_init()) {
    if (curl == nullptr) throw KubeError("curl_easy_init failed");
  }
  ~Handle() {
    if (headers != nullptr) curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

HttpClient::HttpClient(ClusterConfig config, HttpOptions options)
    : config_(std::move(config)), options_(std::move(options)), limiter_(options_.qps, options_.burst) {
  ensure_curl_global();
}

void HttpClient::wait_for_rate_limit() {
  auto wait = limiter_.reserve(Clock::now());
  if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
}

void HttpClient::observe(const std::string& verb, long status, Clock::time_point start) {
  if (options_.observer) options_.observer(verb, status, Clock::now() - start);
}

HttpClient::~HttpClient() = default;

std::unique_ptr<HttpClient::Handle> HttpClient::acquire() {
  std::lock_guard lock(mu_);
  if (!idle_.empty()) {
    auto h = std::move(idle_.back());
    idle_.pop_back();
    return h;
  }
  return std::make_unique<Handle>();
}

void HttpClient::release(std::unique_ptr<Handle> handle) {
  // Every handle is kept: a handle is made only when none is idle, so there are never more than
  // the threads that sent at once, and one dropped would take its connection with it (the next
  // burst would pay a TCP and TLS handshake for each again).
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(handle));
}

std::string HttpClient::bearer_token() {
  if (config_.token_file.empty()) return config_.bearer_token;
  std::lock_guard lock(mu_);
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(config_.token_file, ec);
  if (ec) {
    if (!token_cache_.empty()) return token_cache_;  // a rotation in progress: keep the old one
    throw KubeError("cannot read token file " + config_.token_file + ": " + ec.message());
  }
  if (token_cache_.empty() || mtime != token_mtime_) {
    std::string token = read_file(config_.token_file, "token file");
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    token_cache_ = token;
    token_mtime_ = mtime;
  }
  return token_cache_;
}

void HttpClient::prepare(Handle& h, const HttpRequest& request, std::string& body_sink, HttpResponse& response) {
  CURL* c = h.curl;
  curl_easy_reset(c);  // keeps the connection cache, clears options
  std::string url = config_.server + request.path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_SSL_CTX_FUNCTION, keep_tls_buffers);  // ignored by a curl without OpenSSL
  curl_easy_setopt(c, CURLOPT_USERAGENT, options_.user_agent.c_str());
  if (!config_.ca_pem.empty()) set_blob(c, CURLOPT_CAINFO_BLOB, config_.ca_pem);
  if (!config_.client_cert_pem.empty()) {
    set_blob(c, CURLOPT_SSLCERT_BLOB, config_.client_cert_pem);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    set_blob(c, CURLOPT_SSLKEY_BLOB, config_.client_key_pem);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (h.headers != nullptr) {
    curl_slist_free_all(h.headers);
    h.headers = nullptr;
  }
  h.headers = curl_slist_append(h.headers, "Accept: application/json");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH")
    h.headers = curl_slist_append(h.headers, ("Content-Type: " + request.content_type).c_str());
  if (std::string token = bearer_token(); !token.empty())
    h.headers = curl_slist_append(h.headers, ("Authorization: Bearer " + token).c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h.headers);
  if (request.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body_sink);
}

HttpResponse HttpClient::send(const HttpRequest& request) {
  const bool write = request.method != "GET" && request.method != "HEAD";
  for (int attempt = 0;; ++attempt) {
    if (write && may_write_ && !may_write_())
      throw KubeError(request.method + " " + request.path + ": not sent: this replica's leader lease has lapsed", 0, "NotLeader");
    wait_for_rate_limit();
    auto start = Clock::now();
    auto h = acquire();
    HttpResponse response;
    prepare(*h, request, response.body, response);
    CURLcode rc = curl_easy_perform(h->curl);
    Transport transport = Transport::Answered;
    if (rc == CURLE_OK) {
      curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &response.status);
      release(std::move(h));  // a failed handle may hold a broken connection: not reused
    } else {
      transport = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ? Transport::NotConnected
                                                                                  : Transport::Failed;
    }
    observe(request.method, response.status, start);
    note_date(response);
    std::string retry_after;
    if (auto it = response.headers.find("retry-after"); it != response.headers.end()) retry_after = it->second;
    auto delay = retry_delay(options_.retry, attempt, request.method, transport, response.status, retry_after);
    if (!delay) {
      if (rc != CURLE_OK)
        throw KubeError(request.method + " " + config_.server + request.path + ": " + curl_easy_strerror(rc));
      return response;
    }
    spdlog::debug("{} {}: {}, retry {} in {} ms", request.method, request.path,
                  rc != CURLE_OK ? std::string(curl_easy_strerror(rc)) : "HTTP " + std::to_string(response.status),
                  attempt + 1, delay->count());
    std::this_thread::sleep_for(*delay);
  }
}

HttpResponse HttpClient::stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                                const std::atomic<bool>* cancel) {
  wait_for_rate_limit();
  auto start = Clock::now();
  auto h = acquire();
  HttpResponse response;
  std::string unused;
  prepare(*h, request, unused, response);
  StreamState st;
  st.on_chunk = &on_chunk;
  st.cancel = cancel;
  st.response = &response;
  st.curl = h->curl;
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, &st);
  if (request.idle_timeout.count() > 0) {
    curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request.idle_timeout.count()));
  }
  CURLcode rc = curl_easy_perform(h->curl);
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &response.status);
  observe("WATCH", response.status, start);
  note_date(response);
  if (rc == CURLE_OPERATION_TIMEDOUT && request.idle_timeout.count() > 0 && !st.stopped)
    throw KubeError("watch " + config_.server + request.path + ": no byte for " +
                    std::to_string(request.idle_timeout.count()) + " s, the connection is taken for dead");
  if (rc != CURLE_OK && !st.stopped)
    throw KubeError("watch " + config_.server + request.path + ": " + curl_easy_strerror(rc));
  // A stream stopped midway leaves its connection unusable; only a completed one is reused.
  if (rc == CURLE_OK) release(std::move(h));
  return response;
}

void HttpClient::note_date(const HttpResponse& response) const {
  if (options_.clock == nullptr) return;
  if (auto it = response.headers.find("date"); it != response.headers.end())
    options_.clock->observe_http_date(it->second, response.date_received);
}

}  // namespace valley::kube
