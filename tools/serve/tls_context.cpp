#include "tls_context.hpp"

#include <openssl/ssl.h>

namespace gpumem::serve {
namespace {

namespace ssl = boost::asio::ssl;

int protocol_version(const std::string& name) {
  if (name == "TLS10") return TLS1_VERSION;
  if (name == "TLS11") return TLS1_1_VERSION;
  if (name == "TLS12") return TLS1_2_VERSION;
  if (name == "TLS13") return TLS1_3_VERSION;
  return 0;  // the library's newest
}

}  // namespace

std::unique_ptr<ssl::context> make_tls_context(const TlsConfig& config, std::string& error) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code failure;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::single_dh_use,
                       failure);
  SSL_CTX* native = context->native_handle();
  if (SSL_CTX_set_min_proto_version(native, protocol_version(config.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(native, protocol_version(config.max_version)) != 1) {
    error = "the TLS versions asked for are not available";
    return nullptr;
  }
  context->use_certificate_chain_file(config.cert_file.string(), failure);
  if (failure) {
    error = "cannot use the certificate " + config.cert_file.string() + ": " + failure.message();
    return nullptr;
  }
  context->use_private_key_file(config.key_file.string(), ssl::context::pem, failure);
  if (failure) {
    error = "cannot use the key " + config.key_file.string() + ": " + failure.message();
    return nullptr;
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    error = "the key " + config.key_file.string() + " does not match the certificate";
    return nullptr;
  }
  if (!config.client_ca_file.empty()) {
    context->load_verify_file(config.client_ca_file.string(), failure);
    if (failure) {
      error =
          "cannot use the client CA " + config.client_ca_file.string() + ": " + failure.message();
      return nullptr;
    }
  }
  const std::string& type = config.client_auth_type;
  const bool verify = type == "VerifyClientCertIfGiven" || type == "RequireAndVerifyClientCert";
  const bool require = type == "RequireAnyClientCert" || type == "RequireAndVerifyClientCert";
  if (type == "NoClientCert") {
    context->set_verify_mode(ssl::verify_none);
  } else {
    context->set_verify_mode(ssl::verify_peer | (require ? ssl::verify_fail_if_no_peer_cert : 0));
    // Request…/RequireAnyClientCert take any certificate, as the toolkit's do.
    if (!verify) context->set_verify_callback([](bool, ssl::verify_context&) { return true; });
  }
  return context;
}

}  // namespace gpumem::serve
