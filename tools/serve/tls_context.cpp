#include "tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstring>

namespace gpumem::serve {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reason for a failure, in words: Asio says only "asio.ssl error" for the errors of
// the system (a file that is missing or unreadable) and of some of OpenSSL's libraries.
std::string reason(const boost::system::error_code& failure) {
  std::string text = failure.message();
  if (failure.category() == boost::asio::error::get_ssl_category()) {
    const unsigned long code = static_cast<unsigned int>(failure.value());
    if (ERR_SYSTEM_ERROR(code)) {
      text = std::strerror(ERR_GET_REASON(code));
    } else if (const char* words = ERR_reason_error_string(code)) {
      text = words;
    } else {
      char buffer[256];
      ERR_error_string_n(code, buffer, sizeof buffer);
      text = buffer;
    }
  }
  ERR_clear_error();  // the rest of the queue says the same in other words
  return text;
}

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
    error = "cannot use the certificate " + config.cert_file.string() + ": " + reason(failure);
    return nullptr;
  }
  context->use_private_key_file(config.key_file.string(), ssl::context::pem, failure);
  if (failure) {
    error = "cannot use the key " + config.key_file.string() + ": " + reason(failure);
    return nullptr;
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    error = "the key " + config.key_file.string() + " does not match the certificate";
    return nullptr;
  }
  if (!config.client_ca_file.empty()) {
    context->load_verify_file(config.client_ca_file.string(), failure);
    if (failure) {
      error = "cannot use the client CA " + config.client_ca_file.string() + ": " + reason(failure);
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
