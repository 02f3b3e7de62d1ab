#include "controllers/task/status_writer.h"

#include "operator/kube/error.h"

namespace valley::task {

StatusWrite write_status(kube::Api& client, const kube::Resource& resource, const nlohmann::json& object) {
  StatusWrite w;
  try {
    w.answer = client.update_status(resource, object);
  } catch (const kube::KubeError& e) {
    w.outcome = e.http_status() == 404 ? StatusWrite::Gone : e.http_status() == 409 ? StatusWrite::Conflict : StatusWrite::Failed;
    w.error = e.what();
  }
  return w;
}

}  // namespace valley::task
