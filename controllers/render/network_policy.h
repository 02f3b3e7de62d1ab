// An MPI task's NetworkPolicy: every worker runs sshd and MPI's daemons listen on ports chosen at
// run time, so without one any pod in the cluster could connect to them. The policy selects all of
// the task's pods and admits traffic to them only from the task's own pods (any port: mpirun and
// orted pick theirs), plus from anywhere to the ports the user's templates declare
// (`containerPorts`: a metrics or TensorBoard port is there to be reached). Egress is not limited:
// workers fetch data and write checkpoints to stores Valley cannot know in advance. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "controllers/api/spec.h"

namespace valley::render {

std::string network_policy_name(const std::string& task);  // <task>-mpi
nlohmann::json task_network_policy(const api::TaskSpec& spec);

}  // namespace valley::render
