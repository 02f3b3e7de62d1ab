// A task's NetworkPolicy (MPI and Single alike): an MPI worker runs sshd and MPI's daemons listen on
// ports chosen at run time, and a Single task's notebook or server is its tenant's, so without one
// any pod in the cluster could connect to them. The policy selects all of the task's pods and admits
// traffic to them only from the task's own pods (any port: mpirun and orted pick theirs), plus from
// anywhere to the ports the user's templates declare (`containerPorts`: a metrics or TensorBoard
// port is there to be reached). Egress, by default, is not limited: workers fetch data and write
// checkpoints to stores Valley cannot know in advance (a host name is no CIDR). With `egress_except`
// (the operator's --task-egress-except: the cluster's pod and service ranges, the nodes' metadata
// address) a task reaches its own pods, DNS, and every address outside those ranges (its store on
// the internet) but no other tenant's pods or the nodes' services. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "controllers/api/spec.h"

namespace valley::render {

std::string network_policy_name(const std::string& task);  // <task>-mpi
nlohmann::json task_network_policy(const api::TaskSpec& spec, const std::vector<std::string>& egress_except = {});

}  // namespace valley::render
