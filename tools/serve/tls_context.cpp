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

// The reason for the oldest error in OpenSSL's queue, in words; the queue is emptied.
std::string queued_reason() {
  const unsigned long code = ERR_peek_error();
  const char* words = code != 0 ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return words != nullptr ? words : "the handshake failed";
}

// Why no client could complete a handshake with `server`, or "" when one can: a client limited
// to the same versions shakes hands with it in memory (a BIO pair), client certificates aside.
// The versions a configuration names can be ones the library refuses at its security level
// (Debian's OpenSSL refuses TLS 1.0 and 1.1 at level 2): without this an exporter would start,
// listen, and fail every scrape.
std::string handshake_refusal(SSL_CTX* server_context, int min_version, int max_version) {
  ERR_clear_error();
  SSL_CTX* client_context = SSL_CTX_new(TLS_client_method());
  if (client_context == nullptr) return queued_reason();
  SSL_CTX_set_min_proto_version(client_context, min_version);
  SSL_CTX_set_max_proto_version(client_context, max_version);
  SSL_CTX_set_verify(client_context, SSL_VERIFY_NONE, nullptr);
  SSL* client = SSL_new(client_context);
  SSL* server = SSL_new(server_context);
  BIO* client_end = nullptr;
  BIO* server_end = nullptr;
  std::string refusal;
  if (client == nullptr || server == nullptr ||
      BIO_new_bio_pair(&client_end, 0, &server_end, 0) != 1) {
    refusal = queued_reason();
  } else {
    SSL_set_bio(client, client_end, client_end);
    SSL_set_bio(server, server_end, server_end);
    SSL_set_verify(server, SSL_VERIFY_NONE, nullptr);  // no client certificate in this one
    SSL_set_connect_state(client);
    SSL_set_accept_state(server);
    bool client_done = false;
    bool server_done = false;
    // Each side's turn moves the handshake on; a few turns finish it (TLS 1.2 takes two round
    // trips), and a side that fails ends it.
    for (int turn = 0; turn < 16 && refusal.empty() && !(client_done && server_done); ++turn) {
      for (auto [ssl, done] : {std::pair{client, &client_done}, std::pair{server, &server_done}}) {
        if (*done || !refusal.empty()) continue;
        const int result = SSL_do_handshake(ssl);
        if (result == 1) {
          *done = true;
          continue;
        }
        const int why = SSL_get_error(ssl, result);
        if (why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE) refusal = queued_reason();
      }
    }
    if (refusal.empty() && !(client_done && server_done)) refusal = "the handshake did not finish";
  }
  SSL_free(client);  // each frees its end of the pair
  SSL_free(server);
  SSL_CTX_free(client_context);
  ERR_clear_error();
  return refusal;
}

}  // namespace

std::unique_ptr<ssl::context> make_tls_context(const TlsConfig& config, std::string* error) {
  const auto fail = [error](std::string why) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code failure;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::single_dh_use,
                       failure);
  SSL_CTX* native = context->native_handle();
  if (SSL_CTX_set_min_proto_version(native, protocol_version(config.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(native, protocol_version(config.max_version)) != 1) {
    return fail("the TLS versions asked for are not available");
  }
  context->use_certificate_chain_file(config.cert_file.string(), failure);
  if (failure) {
    return fail("cannot use the certificate " + config.cert_file.string() + ": " + reason(failure));
  }
  context->use_private_key_file(config.key_file.string(), ssl::context::pem, failure);
  if (failure) {
    return fail("cannot use the key " + config.key_file.string() + ": " + reason(failure));
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    return fail("the key " + config.key_file.string() + " does not match the certificate");
  }
  if (!config.client_ca_file.empty()) {
    context->load_verify_file(config.client_ca_file.string(), failure);
    if (failure) {
      return fail("cannot use the client CA " + config.client_ca_file.string() + ": " +
                  reason(failure));
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
  const std::string refusal = handshake_refusal(native, protocol_version(config.min_version),
                                                protocol_version(config.max_version));
  if (!refusal.empty()) {
    const bool old_only = config.max_version == "TLS10" || config.max_version == "TLS11";
    return fail(
        "no TLS client can connect with min_version " + config.min_version + " and max_version " +
        (config.max_version.empty() ? "(the newest)" : config.max_version) + ": " + refusal +
        (old_only
             ? " (TLS 1.0 and 1.1 are refused at this OpenSSL's security level " +
                   std::to_string(SSL_CTX_get_security_level(native)) + "; allow TLS12 or TLS13)"
             : ""));
  }
  return context;
}

}  // namespace gpumem::serve
