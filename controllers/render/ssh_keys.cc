#include "controllers/render/ssh_keys.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <stdexcept>

#include "operator/kube/base64.h"

namespace valley::render {
namespace {

// An SSH wire-format string: 4-byte big-endian length, then the bytes.
void put_string(std::string& out, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  out += static_cast<char>((n >> 24) & 0xFF);
  out += static_cast<char>((n >> 16) & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  out += static_cast<char>(n & 0xFF);
  out += s;
}

}  // namespace

SshKeyPair generate_ssh_key_pair(const std::string& comment) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"),
                                                          EVP_PKEY_free);
  if (!key) throw std::runtime_error("OpenSSL could not generate an EC key");

  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    throw std::runtime_error("OpenSSL could not write the private key");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  SshKeyPair pair;
  pair.private_pem.assign(data, static_cast<size_t>(len));

  unsigned char point[133];
  size_t point_len = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof point, &point_len) != 1)
    throw std::runtime_error("OpenSSL could not export the public key");
  std::string blob;
  put_string(blob, "ecdsa-sha2-nistp256");
  put_string(blob, "nistp256");
  put_string(blob, std::string(reinterpret_cast<const char*>(point), point_len));
  pair.public_openssh = "ecdsa-sha2-nistp256 " + kube::base64_encode(blob) + " " + comment;
  return pair;
}

}  // namespace valley::render
