// The web configuration file of Prometheus' exporter toolkit (`--web.config.file`): TLS and
// basic authentication, in the toolkit's YAML format, so one file serves every exporter of a
// fleet. https://prometheus.io/docs/prometheus/latest/configuration/https/
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace gpumem::serve {

struct TlsConfig {
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  // NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or
  // RequireAndVerifyClientCert, as in the toolkit.
  std::string client_auth_type = "NoClientCert";
  std::filesystem::path client_ca_file;
  std::string min_version = "TLS12";  // TLS10 … TLS13
  std::string max_version;            // empty: the newest the library knows
};

struct WebConfig {
  std::optional<TlsConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::map<std::string, std::string> headers;           // added to every response
};

// Reads and checks the file; nullopt when it is not a valid configuration, with the reason in
// `error` when given ("FILE: why"; unknown keys are errors, as in the toolkit, so that a typo
// does not silently leave an exporter open). Relative file names are taken relative to the
// configuration file's directory.
std::optional<WebConfig> load_web_config(const std::filesystem::path& file,
                                         std::string* error = nullptr);

}  // namespace gpumem::serve
