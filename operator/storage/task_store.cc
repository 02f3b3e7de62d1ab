#include "operator/storage/task_store.h"

#include "operator/kube/base64.h"
#include "operator/kube/error.h"

namespace valley::storage {

std::unique_ptr<ObjectStore> open_task_store(kube::Api& client, const std::string& ns, const std::string& secret,
                                             const std::string& uri, const std::string& what, std::string* error,
                                             const std::vector<std::string>& denied_cidrs) {
  std::map<std::string, std::string> values;
  if (!secret.empty()) {
    try {
      auto object = client.get(kube::resources::kSecrets, ns, secret);
      const nlohmann::json data = object.contains("data") && object["data"].is_object() ? object["data"] : nlohmann::json::object();
      for (auto it = data.begin(); it != data.end(); ++it)
        if (it->is_string()) values[it.key()] = kube::base64_decode(it->get<std::string>()).value_or("");
    } catch (const kube::KubeError& e) {
      *error = what + " Secret " + ns + "/" + secret + ": " + e.what();  // "checkpoint Secret team/creds: ..."
      return nullptr;
    }
  }
  std::string why;
  auto location = parse_location(uri, &why);
  auto settings = location ? s3_settings_from(values, &why) : std::nullopt;
  if (!settings) {
    *error = what + " store " + uri + ": " + (secret.empty() && location ? "no spec." + what + ".secretRef (" + why + ")" : why);
    return nullptr;
  }
  return make_s3_store(*location, with_operator_bounds(*settings, denied_cidrs));
}

}  // namespace valley::storage
