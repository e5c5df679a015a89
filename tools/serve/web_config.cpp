#include "web_config.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

namespace gpumem::serve {
namespace {

struct ConfigError {
  std::string what;
};

void only_keys(const YAML::Node& node, std::string_view where,
               const std::set<std::string, std::less<>>& allowed) {
  if (!node.IsMap()) throw ConfigError{std::string(where) + " must be a mapping"};
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    if (!allowed.count(key)) {
      throw ConfigError{"unknown key '" + key + "' in " + std::string(where)};
    }
  }
}

std::string text(const YAML::Node& node, std::string_view key) {
  if (!node.IsScalar()) throw ConfigError{std::string(key) + " must be a string"};
  return node.as<std::string>();
}

std::filesystem::path file_name(const YAML::Node& node, std::string_view key,
                                const std::filesystem::path& base) {
  std::filesystem::path path = text(node, key);
  return path.empty() || path.is_absolute() ? path : base / path;
}

TlsConfig parse_tls(const YAML::Node& node, const std::filesystem::path& base) {
  only_keys(node, "tls_server_config",
            {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
             "max_version", "cipher_suites", "prefer_server_cipher_suites", "curve_preferences"});
  TlsConfig tls;
  if (node["cert_file"]) tls.cert_file = file_name(node["cert_file"], "cert_file", base);
  if (node["key_file"]) tls.key_file = file_name(node["key_file"], "key_file", base);
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    throw ConfigError{"tls_server_config needs cert_file and key_file"};
  }
  if (node["client_auth_type"]) {
    tls.client_auth_type = text(node["client_auth_type"], "client_auth_type");
    static const std::set<std::string, std::less<>> kTypes = {
        "NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
        "RequireAndVerifyClientCert"};
    if (!kTypes.count(tls.client_auth_type)) {
      throw ConfigError{"invalid client_auth_type '" + tls.client_auth_type + "'"};
    }
  }
  if (node["client_ca_file"]) {
    tls.client_ca_file = file_name(node["client_ca_file"], "client_ca_file", base);
  }
  const bool verifies = tls.client_auth_type == "VerifyClientCertIfGiven" ||
                        tls.client_auth_type == "RequireAndVerifyClientCert";
  if (verifies && tls.client_ca_file.empty()) {
    throw ConfigError{"client_auth_type " + tls.client_auth_type + " needs client_ca_file"};
  }
  // TLS10 < TLS11 < TLS12 < TLS13 as strings, as the versions they name.
  static const std::set<std::string, std::less<>> kVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};
  for (auto [key, field] :
       {std::pair{"min_version", &tls.min_version}, std::pair{"max_version", &tls.max_version}}) {
    if (!node[key]) continue;
    *field = text(node[key], key);
    if (!kVersions.count(*field)) throw ConfigError{"invalid " + std::string(key)};
  }
  // Every handshake would fail: refused now rather than found out by the first scrape.
  if (!tls.max_version.empty() && tls.min_version > tls.max_version) {
    throw ConfigError{"min_version " + tls.min_version +
                      (node["min_version"] ? "" : " (the default)") + " is above max_version " +
                      tls.max_version};
  }
  // cipher_suites, prefer_server_cipher_suites and curve_preferences name Go's constants: the
  // defaults of OpenSSL (modern suites only from TLS 1.2 on) apply, so they are refused rather
  // than silently ignored.
  for (const char* key : {"cipher_suites", "curve_preferences"}) {
    if (node[key]) throw ConfigError{std::string(key) + " is not supported by gpumem serve"};
  }
  return tls;
}

WebConfig parse(const YAML::Node& root, const std::filesystem::path& base) {
  WebConfig config;
  if (root.IsNull()) return config;  // an empty file: plain HTTP, no authentication
  only_keys(root, "the web configuration",
            {"tls_server_config", "http_server_config", "basic_auth_users"});
  if (root["tls_server_config"] && !root["tls_server_config"].IsNull()) {
    config.tls = parse_tls(root["tls_server_config"], base);
  }
  if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
    only_keys(http, "http_server_config", {"http2", "headers"});
    if (const YAML::Node headers = http["headers"]; headers && !headers.IsNull()) {
      only_keys(headers, "http_server_config.headers",
                {"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options",
                 "X-XSS-Protection", "Strict-Transport-Security"});
      for (const auto& entry : headers) {
        const std::string value = text(entry.second, entry.first.as<std::string>());
        if (value.find_first_of("\r\n") != std::string::npos) {
          throw ConfigError{"a header value spans lines"};
        }
        config.headers[entry.first.as<std::string>()] = value;
      }
    }
  }
  if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap()) throw ConfigError{"basic_auth_users must be a mapping"};
    for (const auto& entry : users) {
      const std::string user = entry.first.as<std::string>();
      const std::string hash = text(entry.second, user);
      if (user.empty() || user.find(':') != std::string::npos) {
        throw ConfigError{"invalid user name '" + user + "' in basic_auth_users"};
      }
      if (!(hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$"))) {
        throw ConfigError{"the password of '" + user + "' is not a bcrypt hash ($2a$, $2b$, $2y$)"};
      }
      config.basic_auth_users[user] = hash;
    }
  }
  return config;
}

}  // namespace

std::optional<WebConfig> load_web_config(const std::filesystem::path& file, std::string* error) {
  std::string why;
  try {
    return parse(YAML::LoadFile(file.string()), file.parent_path());
  } catch (const ConfigError& e) {
    why = e.what;
  } catch (const YAML::Exception& e) {
    why = e.what();
  }
  if (error != nullptr) *error = file.string() + ": " + why;
  return std::nullopt;
}

}  // namespace gpumem::serve
