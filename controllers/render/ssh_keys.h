// A per-task SSH key pair for mpirun's ssh between launcher and workers, made with OpenSSL:
// ECDSA P-256, private key as PKCS#8 PEM (OpenSSH reads it), public key in OpenSSH's
// authorized_keys format. Not pure (randomness), but no I/O.
#pragma once

#include <string>

namespace valley::render {

struct SshKeyPair {
  std::string private_pem;
  std::string public_openssh;  // "ecdsa-sha2-nistp256 AAAA... valley"
};

// Throws std::runtime_error if OpenSSL fails (it does not, short of memory exhaustion).
SshKeyPair generate_ssh_key_pair(const std::string& comment = "valley");

}  // namespace valley::render
