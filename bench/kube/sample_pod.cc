#include "bench/kube/sample_pod.h"

namespace valley::bench {

using json = nlohmann::json;

json sample_pod_spec(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"app.kubernetes.io/managed-by", "valley"},
          {"valley.dev/task", "resnet50"},
          {"valley.dev/role", "worker"},
          {"valley.dev/epoch", "3"}}},
        {"annotations", {{"valley.dev/placement", "a100-od-0"}}}}},
      {"spec",
       {{"schedulerName", "valley-bench-none"},  // no scheduler picks it: it stays as created
        {"restartPolicy", "Never"},
        {"containers",
         {{{"name", "worker"},
           {"image", "registry.example/train-worker:1.0"},
           {"command", {"/usr/sbin/sshd", "-De"}},
           {"env",
            {{{"name", "VALLEY_TASK"}, {"value", "resnet50"}},
             {{"name", "VALLEY_WORLD_SIZE"}, {"value", "16"}},
             {{"name", "VALLEY_EPOCH"}, {"value", "3"}},
             {{"name", "VALLEY_CHECKPOINT_URI"}, {"value", "s3://bucket/team-a/resnet50/"}},
             {{"name", "VALLEY_RESUME"}, {"value", "1"}}}},
           {"resources",
            {{"requests", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}},
             {"limits", {{"nvidia.com/gpu", "1"}}}}},
           {"volumeMounts", {{{"name", "ssh"}, {"mountPath", "/root/.ssh"}}}}}}},
        {"volumes", {{{"name", "ssh"}, {"secret", {{"secretName", "resnet50-ssh"}, {"defaultMode", 384}}}}}}}}};
}

json sample_pod_from_server(const std::string& ns, const std::string& name, int resource_version) {
  json pod = sample_pod_spec(name);
  auto& meta = pod["metadata"];
  meta["namespace"] = ns;
  meta["uid"] = "5d0c2f9e-8f4c-4d7a-9a41-" + std::to_string(100000000000 + resource_version);
  meta["resourceVersion"] = std::to_string(resource_version);
  meta["creationTimestamp"] = "2026-11-22T03:04:05Z";
  meta["ownerReferences"] = {{{"apiVersion", "valley.dev/v1beta1"},
                              {"kind", "TrainingTask"},
                              {"name", "resnet50"},
                              {"uid", "0b7a1c3e-1111-4222-8333-944445555666"},
                              {"controller", true},
                              {"blockOwnerDeletion", true}}};
  meta["managedFields"] = json::parse(R"([{"manager":"valley-operator","operation":"Update","apiVersion":"v1",
    "time":"2026-11-22T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},
    "f:valley.dev/task":{},"f:valley.dev/role":{},"f:valley.dev/epoch":{}},"f:ownerReferences":{".":{},
    "k:{\"uid\":\"0b7a1c3e-1111-4222-8333-944445555666\"}":{}}},"f:spec":{"f:containers":{
    "k:{\"name\":\"worker\"}":{".":{},"f:env":{},"f:image":{},"f:resources":{}}}}}}])");
  auto& spec = pod["spec"];
  spec["nodeName"] = "a100-od-0";
  spec["dnsPolicy"] = "ClusterFirst";
  spec["serviceAccountName"] = "default";
  spec["terminationGracePeriodSeconds"] = 30;
  spec["tolerations"] = {{{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}},
                         {{"key", "node.kubernetes.io/unreachable"}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}}};
  spec["volumes"].push_back({{"name", "kube-api-access-x7k2p"},
                             {"projected",
                              {{"defaultMode", 420},
                               {"sources",
                                {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
                                 {{"configMap", {{"name", "kube-root-ca.crt"}, {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}}}}}}});
  spec["containers"][0]["terminationMessagePath"] = "/dev/termination-log";
  spec["containers"][0]["imagePullPolicy"] = "IfNotPresent";
  pod["status"] = {{"phase", "Running"},
                   {"hostIP", "10.0.0.1"},
                   {"podIP", "10.244.3.17"},
                   {"startTime", "2026-11-22T03:04:06Z"},
                   {"qosClass", "Burstable"},
                   {"conditions",
                    {{{"type", "Initialized"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T03:04:06Z"}},
                     {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T03:04:07Z"}},
                     {{"type", "ContainersReady"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T03:04:07Z"}},
                     {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T03:04:05Z"}}}},
                   {"containerStatuses",
                    {{{"name", "worker"},
                      {"ready", true},
                      {"restartCount", 0},
                      {"image", "registry.example/train-worker:1.0"},
                      {"state", {{"running", {{"startedAt", "2026-11-22T03:04:07Z"}}}}}}}}};
  return pod;
}

}  // namespace valley::bench
