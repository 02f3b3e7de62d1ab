// What the loop tests share: waiting for what the loops do, and a GPU node as kwok would show one.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace valley::testing {

// Polls `done` until it returns true or `timeout` passes; returns the last result.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  for (auto until = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// A Ready node with `gpus` NVIDIA A100s (and room for pods), with `labels` besides its hostname's.
inline nlohmann::json gpu_node(const std::string& name, int gpus, nlohmann::json labels = nlohmann::json::object()) {
  labels["kubernetes.io/hostname"] = name;
  labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  const nlohmann::json resources = {{"cpu", "96"}, {"memory", "1152Gi"}, {"pods", "110"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}, {"conditions", nlohmann::json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

}  // namespace valley::testing
