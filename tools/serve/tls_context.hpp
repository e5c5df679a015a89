// An OpenSSL server context (through Boost.Asio) from the web configuration's TLS settings.
#pragma once

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

#include "web_config.hpp"

namespace gpumem::serve {

// nullptr when a file cannot be read or does not match, with the reason in `error` when given.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const TlsConfig& config,
                                                            std::string* error = nullptr);

}  // namespace gpumem::serve
