#include "web_config.hpp"

#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "basic_auth.hpp"
#include "serve/exporter_process.hpp"
#include "tls_context.hpp"

namespace gpumem::serve {
namespace {

namespace fs = std::filesystem;

// A bcrypt hash made by libxcrypt, at the lowest cost so the tests stay quick.
std::string bcrypt(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (::crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting) == nullptr) return {};
  crypt_data data{};
  const char* hash = ::crypt_r(password.c_str(), setting, &data);
  return hash == nullptr ? std::string() : hash;
}

class WebConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpumem-web-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::optional<WebConfig> load(const std::string& text) {
    std::ofstream(dir_ / "web.yml") << text;
    error_.clear();
    return load_web_config(dir_ / "web.yml", &error_);
  }
  fs::path dir_;
  std::string error_;
};

TEST_F(WebConfigFile, ReadsTheExporterToolkitsFormat) {
  const std::string hash = bcrypt("secret");
  auto config = load(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: /etc/k.key\n"
      "  min_version: TLS13\n"
      "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
      "basic_auth_users:\n  prometheus: " +
      hash + "\n");
  ASSERT_TRUE(config) << error_;
  ASSERT_TRUE(config->tls);
  EXPECT_EQ(config->tls->cert_file, dir_ / "server.crt");  // relative to the file
  EXPECT_EQ(config->tls->key_file, fs::path("/etc/k.key"));
  EXPECT_EQ(config->tls->min_version, "TLS13");
  EXPECT_EQ(config->tls->client_auth_type, "NoClientCert");
  EXPECT_EQ(config->basic_auth_users.at("prometheus"), hash);
  EXPECT_EQ(config->headers.at("X-Frame-Options"), "deny");
}

TEST_F(WebConfigFile, AnEmptyFileMeansPlainHttp) {
  auto config = load("");
  ASSERT_TRUE(config) << error_;
  EXPECT_FALSE(config->tls);
  EXPECT_TRUE(config->basic_auth_users.empty());
}

TEST_F(WebConfigFile, RefusesMistakesWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"tls_server_config:\n  cert_file: a.crt\n", "needs cert_file and key_file"},
      {"tls_srver_config:\n  cert_file: a\n", "unknown key 'tls_srver_config'"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n",
       "invalid min_version"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n"
       "  client_auth_type: RequireAndVerifyClientCert\n",
       "needs client_ca_file"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
       "  max_version: TLS12\n",
       "min_version TLS13 is above max_version TLS12"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  max_version: TLS11\n",
       "min_version TLS12 (the default) is above max_version TLS11"},
      {"basic_auth_users:\n  alice: plaintext\n", "not a bcrypt hash"},
      {"basic_auth_users: [a, b]\n", "must be a mapping"},
      {"basic_auth_users:\n  alice: [\n", ""},  // not YAML
  };
  for (const auto& [text, why] : cases) {
    EXPECT_FALSE(load(text)) << text;
    EXPECT_NE(error_.find(why), std::string::npos) << text << " -> " << error_;
    EXPECT_NE(error_.find("web.yml"), std::string::npos) << error_;
  }
}

TEST_F(WebConfigFile, AcceptsEqualTlsVersions) {
  auto config = load(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
      "  max_version: TLS13\n");
  ASSERT_TRUE(config) << error_;
  EXPECT_EQ(config->tls->max_version, "TLS13");
}

TEST_F(WebConfigFile, NamesACertificateOrKeyThatCannotBeUsedAndWhy) {
  TlsConfig tls;
  tls.cert_file = dir_ / "missing.crt";
  tls.key_file = dir_ / "missing.key";
  std::string error;
  EXPECT_FALSE(make_tls_context(tls, &error));
  EXPECT_EQ(error,
            "cannot use the certificate " + tls.cert_file.string() + ": No such file or directory");
  std::ofstream(dir_ / "garbage.crt") << "not a certificate\n";
  tls.cert_file = dir_ / "garbage.crt";
  error.clear();
  EXPECT_FALSE(make_tls_context(tls, &error));
  EXPECT_TRUE(error.starts_with("cannot use the certificate " + tls.cert_file.string() + ": "))
      << error;
  EXPECT_EQ(error.find("asio.ssl error"), std::string::npos) << error;
}

// A self-signed certificate for localhost and its key (EC P-256), as PEM files.
bool write_self_signed(const fs::path& certificate, const fs::path& key) {
  EVP_PKEY* pair = EVP_EC_gen("P-256");
  X509* x509 = X509_new();
  bool ok = pair != nullptr && x509 != nullptr;
  if (ok) {
    ASN1_INTEGER_set(X509_get_serialNumber(x509), 1);
    X509_gmtime_adj(X509_getm_notBefore(x509), 0);
    X509_gmtime_adj(X509_getm_notAfter(x509), 3600);
    X509_set_pubkey(x509, pair);
    X509_NAME* name = X509_get_subject_name(x509);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(x509, name);
    ok = X509_sign(x509, pair, EVP_sha256()) > 0;
  }
  if (ok) {
    std::FILE* out = std::fopen(certificate.c_str(), "w");
    ok = out != nullptr && PEM_write_X509(out, x509) == 1;
    if (out != nullptr) std::fclose(out);
  }
  if (ok) {
    std::FILE* out = std::fopen(key.c_str(), "w");
    ok = out != nullptr &&
         PEM_write_PrivateKey(out, pair, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (out != nullptr) std::fclose(out);
  }
  X509_free(x509);
  EVP_PKEY_free(pair);
  return ok;
}

// Issue 30: a web configuration with min_version = max_version = TLS10 started, and every
// handshake then failed (this OpenSSL refuses TLS 1.0 and 1.1 at its security level). A range no
// client can complete a handshake in is refused when the context is made; one it can is kept.
TEST_F(WebConfigFile, ATlsRangeNoHandshakeCanCompleteInIsRefused) {
  ASSERT_TRUE(write_self_signed(dir_ / "server.crt", dir_ / "server.key"));
  TlsConfig tls;
  tls.cert_file = dir_ / "server.crt";
  tls.key_file = dir_ / "server.key";
  for (const auto& [low, high] : {std::pair{"TLS12", ""}, std::pair{"TLS13", "TLS13"},
                                  std::pair{"TLS12", "TLS12"}, std::pair{"TLS10", "TLS13"}}) {
    tls.min_version = low;
    tls.max_version = high;
    std::string error;
    EXPECT_TRUE(make_tls_context(tls, &error)) << low << "-" << high << ": " << error;
  }
  for (const char* old : {"TLS10", "TLS11"}) {
    tls.min_version = old;
    tls.max_version = old;
    std::string error;
    EXPECT_FALSE(make_tls_context(tls, &error)) << old;
    EXPECT_TRUE(error.starts_with("no TLS client can connect with min_version " + std::string(old) +
                                  " and max_version " + old + ": "))
        << error;
    EXPECT_NE(error.find("allow TLS12 or TLS13"), std::string::npos) << error;
  }
}

TEST_F(WebConfigFile, TheExporterRefusesAnImpossibleTlsRangeAtStart) {
  ASSERT_TRUE(write_self_signed(dir_ / "server.crt", dir_ / "server.key"));
  std::ofstream(dir_ / "web.yml") << "tls_server_config:\n  cert_file: server.crt\n"
                                     "  key_file: server.key\n  min_version: TLS10\n"
                                     "  max_version: TLS10\n";
  testing::ExporterProcess exporter(
      {"--listen", "127.0.0.1:0", "--web.config.file", (dir_ / "web.yml").string()});
  EXPECT_EQ(exporter.wait(), 2);
  EXPECT_TRUE(
      exporter.err().starts_with("gpumem serve: invalid --web.config.file: no TLS client "
                                 "can connect with min_version TLS10 and max_version "
                                 "TLS10: "))
      << exporter.err();
}

TEST(BasicAuth, ParsesCredentials) {
  auto credentials = parse_basic_credentials("Basic cHJvbWV0aGV1czpzM2NyM3Q6eA==");
  ASSERT_TRUE(credentials);
  EXPECT_EQ(credentials->first, "prometheus");
  EXPECT_EQ(credentials->second, "s3cr3t:x");  // only the first colon separates
  EXPECT_TRUE(parse_basic_credentials("basic YTpi"));
  for (const char* bad : {"", "Basic", "Basic ", "Bearer YTpi", "Basic YTpi=", "Basic !!!!",
                          "Basic YWJj"}) {  // "abc": no colon
    EXPECT_FALSE(parse_basic_credentials(bad)) << bad;
  }
}

TEST(BasicAuth, ChecksBcryptHashesOffTheCallersThread) {
  BasicAuth auth({{"prometheus", bcrypt("s3cr3t")}});
  const std::string good = "Basic cHJvbWV0aGV1czpzM2NyM3Q=";   // prometheus:s3cr3t
  const std::string wrong = "Basic cHJvbWV0aGV1czp3cm9uZw==";  // prometheus:wrong
  EXPECT_EQ(auth.quick_check(""), false);
  EXPECT_EQ(auth.quick_check(good), std::nullopt);  // not yet verified
  std::promise<bool> first;
  ASSERT_TRUE(auth.check(good, [&](bool allowed) { first.set_value(allowed); }));
  EXPECT_TRUE(first.get_future().get());
  EXPECT_EQ(auth.quick_check(good), true);  // remembered
  std::promise<bool> second;
  ASSERT_TRUE(auth.check(wrong, [&](bool allowed) { second.set_value(allowed); }));
  EXPECT_FALSE(second.get_future().get());
  EXPECT_EQ(auth.quick_check(wrong), std::nullopt);  // failures are not remembered
  EXPECT_TRUE(BasicAuth::bcrypt_matches("s3cr3t", bcrypt("s3cr3t")));
  EXPECT_FALSE(BasicAuth::bcrypt_matches("s3cr3t", "$2b$04$invalid"));
}

TEST(BasicAuth, ANulDoesNotEndThePassword) {
  const std::string hash = bcrypt("s3cr3t");
  EXPECT_TRUE(BasicAuth::bcrypt_matches("s3cr3t", hash));
  EXPECT_FALSE(BasicAuth::bcrypt_matches(std::string("s3cr3t\0anything", 15), hash));
  EXPECT_FALSE(BasicAuth::bcrypt_matches(std::string("s3cr3t\0", 7), hash));
  // The same through the header: "prometheus:s3cr3t\0anything".
  BasicAuth auth({{"prometheus", hash}});
  const std::string header = "Basic cHJvbWV0aGV1czpzM2NyM3QAYW55dGhpbmc=";
  auto credentials = parse_basic_credentials(header);
  ASSERT_TRUE(credentials);
  EXPECT_EQ(credentials->second, std::string("s3cr3t\0anything", 15));
  std::promise<bool> checked;
  ASSERT_TRUE(auth.check(header, [&](bool allowed) { checked.set_value(allowed); }));
  EXPECT_FALSE(checked.get_future().get());
}

}  // namespace
}  // namespace gpumem::serve
