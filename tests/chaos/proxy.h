// A TCP proxy between the operators and the API server, so the chaos driver can slow or cut their
// connections the way a flaky network would: every byte is forwarded as is (TLS passes through),
// `delay` holds each chunk back, `drop_for` closes every open connection and refuses new ones for a
// while, `stall_open` stops forwarding on every open connection without closing it (a connection
// that died with no FIN: only the peer's own deadline notices). One thread per connection: the operators keep only a handful open.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace valley::chaos {

class Proxy {
 public:
  Proxy(std::string upstream_host, int upstream_port);  // listens on 127.0.0.1, a free port
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  int port() const { return port_; }
  void set_delay(std::chrono::milliseconds d) { delay_ms_ = d.count(); }
  void drop_for(std::chrono::milliseconds d);
  void stall_open();

 private:
  void accept_loop();
  void pipe(int client);
  bool dropping() const;

  std::string host_;
  int upstream_port_ = 0, listen_fd_ = -1, port_ = 0;
  std::atomic<int64_t> delay_ms_{0};
  std::atomic<int64_t> drop_until_ms_{0};  // steady clock
  std::atomic<uint64_t> generation_{0};    // bumped by drop_for: older connections close
  std::atomic<uint64_t> stalled_below_{0};  // connections of an older generation forward nothing
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
};

}  // namespace valley::chaos
