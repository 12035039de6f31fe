// serve --web-config-file: the web configuration parser (http/web_config.hpp), Basic credentials
// and their bcrypt check with its cache (http/basic_auth.hpp), the Authorization field of requests.

#include <gtest/gtest.h>
#include <poll.h>

#include <string>

#include "http/basic_auth.hpp"
#include "http/http_request.hpp"
#include "http/http_response.hpp"
#include "http/web_config.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

// bcrypt of "s3cret" at cost 4 (the least), so that the tests check real hashes quickly.
constexpr const char* kWebConfigHash =
    "$2b$04$nXlefLb8iV.FxJAKB8biu.tEAsCxfybHxVaF92iUqbY3kXG2Iqh5O";

web_config parse_web(const std::string& yaml) {
  return parse_web_config(yaml, "/etc/joules/web.yml");
}

// The message of the usage_error parsing `yaml` throws ("" when it throws none).
std::string web_config_error(const std::string& yaml) {
  try {
    parse_web(yaml);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

TEST(WebConfig, AnEmptyFileIsPlainHttpWithoutUsers) {
  for (const char* empty : {"", "# nothing\n", "---\n", "~\n"}) {
    const web_config c = parse_web(empty);
    EXPECT_FALSE(c.tls) << empty;
    EXPECT_TRUE(c.users.empty());
    EXPECT_TRUE(c.headers.empty());
  }
  // Sections given but empty, as the toolkit reads them.
  const web_config c = parse_web("tls_server_config:\nbasic_auth_users: {}\nhttp_server_config:\n");
  EXPECT_FALSE(c.tls);
  EXPECT_TRUE(c.users.empty());
}

TEST(WebConfig, ReadsEveryKeyAndTakesRelativeNamesFromTheFilesDirectory) {
  const web_config c = parse_web(std::string(R"(
tls_server_config:
  cert_file: tls/server.crt
  key_file: /secure/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
  min_version: TLS13
  max_version: TLS13
  cipher_suites:
    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
  prefer_server_cipher_suites: false
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: sameorigin
    Strict-Transport-Security: "max-age=31536000; includeSubDomains"
    X-XSS-Protection: ""
basic_auth_users:
  bob: ")") + kWebConfigHash + R"("
  alice: )" + kWebConfigHash + "\n");
  ASSERT_TRUE(c.tls);
  const tls_settings& t = c.tls_server;
  EXPECT_EQ(t.cert.file, "/etc/joules/tls/server.crt");
  EXPECT_EQ(t.key.file, "/secure/server.key");
  EXPECT_EQ(t.client_ca.file, "/etc/joules/ca.pem");
  EXPECT_EQ(t.auth, client_auth::require_and_verify);
  EXPECT_EQ(t.min_version, 0x0304);
  EXPECT_EQ(t.max_version, 0x0304);
  EXPECT_EQ(t.cipher_suites, std::vector<std::string>{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"});
  EXPECT_FALSE(t.prefer_server_cipher_suites);
  EXPECT_EQ(t.curves, (std::vector<std::string>{"X25519", "P-256"}));
  ASSERT_EQ(c.users.size(), 2U);
  EXPECT_EQ(c.users[0].first, "bob");  // in file order
  EXPECT_EQ(c.users[1].second, kWebConfigHash);
  ASSERT_EQ(c.headers.size(), 2U);  // the blank one is unset
  EXPECT_EQ(c.headers[0], (std::pair<std::string, std::string>{"X-Frame-Options", "sameorigin"}));
  EXPECT_EQ(c.headers[1].second, "max-age=31536000; includeSubDomains");
}

TEST(WebConfig, TakesInlinePemAndTheClientAuthNames) {
  const web_config c = parse_web(
      "tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n    AAAA\n"
      "    -----END CERTIFICATE-----\n  key: \"k\"\n  client_auth_type: RequireClientCert\n");
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls_server.cert.text,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  EXPECT_TRUE(c.tls_server.cert.file.empty());
  EXPECT_EQ(c.tls_server.auth, client_auth::require_any);  // the older name
  const std::string tls = "tls_server_config:\n  cert: c\n  key: k\n  client_auth_type: ";
  EXPECT_EQ(parse_web(tls + "RequestClientCert\n").tls_server.auth, client_auth::request);
  EXPECT_EQ(parse_web(tls + "NoClientCert\n").tls_server.auth, client_auth::none);
  EXPECT_EQ(parse_web(tls + "VerifyClientCertIfGiven\n  client_ca: x\n").tls_server.auth,
            client_auth::verify_if_given);
  // Defaults: TLS 1.2 to 1.3, no client certificates.
  const web_config d = parse_web("tls_server_config:\n  cert: c\n  key: k\n");
  EXPECT_EQ(d.tls_server.min_version, 0x0303);
  EXPECT_EQ(d.tls_server.max_version, 0x0304);
  EXPECT_EQ(d.tls_server.auth, client_auth::none);
}

TEST(WebConfig, RefusesWhatItCannotHonourWithTheLineAndTheFile) {
  EXPECT_EQ(web_config_error("tls_server_config:\n  cert_file: a\n  key_file: b\n  keyfile: c\n"),
            "--web-config-file /etc/joules/web.yml: line 4: unknown key 'keyfile' in "
            "tls_server_config");
  const std::pair<std::string, const char*> cases[] = {
      {"nonsense: 1\n", "unknown key 'nonsense'"},
      {"tls_server_config: [a]\n", "tls_server_config must be a mapping, not a list"},
      {"tls_server_config:\n  cert_file: [a]\n", "cert_file must be a text, not a list"},
      {"tls_server_config:\n  cert_file: a\n", "needs key_file"},
      {"tls_server_config:\n  key_file: a\n", "needs cert_file"},
      {"tls_server_config:\n  cert: a\n  cert_file: a\n  key: k\n", "not both"},
      {"tls_server_config:\n  cert: a\n  key: k\n  min_version: TLS13\n  max_version: TLS12\n",
       "min_version is above max_version"},
      {"tls_server_config:\n  cert: a\n  key: k\n  min_version: 1.2\n", "min_version '1.2'"},
      {"tls_server_config:\n  cert: a\n  key: k\n  prefer_server_cipher_suites: maybe\n",
       "expected true or false"},
      {"tls_server_config:\n  cert: a\n  key: k\n  curve_preferences: [P-256]\n",
       "curve_preferences 'P-256'"},
      {"tls_server_config:\n  client_ca_file: ca\n  cert: a\n  key: k\n", "NoClientCert"},
      {"tls_server_config:\n  cert: a\n  key: k\n  client_auth_type: VerifyClientCertIfGiven\n",
       "line 4: client_auth_type verifies client certificates: it needs client_ca_file"},
      {"rate_limit:\n  burst: 1\n", "rate_limit is not supported"},
      {"basic_auth_users:\n  a: x\n  a: y\n", "line 3: 'a' is given twice"},
      {"basic_auth_users:\n  a:b: " + std::string(kWebConfigHash) + "\n", "without ':'"},
      {"basic_auth_users:\n  a: $2b$04$short\n", "is not a bcrypt hash"},
      {"basic_auth_users: [a]\n", "must be a mapping"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
       "expected deny or "
       "sameorigin"},
      {"http_server_config:\n  headers:\n    Set-Cookie: a\n", "cannot be set"},
      {"http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nSet-Cookie: a\"\n",
       "one line of text"},
      {"http_server_config:\n  gzip: true\n", "unknown key 'gzip'"},
      {"a: &x 1\nb: *x\n", "aliases are not accepted"},
      {"---\na: 1\n---\nb: 2\n", "more than one YAML document"},
      {"tls_server_config:\n  cert_file: [a\n", "not YAML"},
      {"[1, 2]\n", "the file must be a mapping"},
      {"? [a]\n: b\n", "a key must be text"},
  };
  for (const auto& [yaml, want] : cases) {
    const std::string e = web_config_error(yaml);
    EXPECT_NE(e.find(want), std::string::npos) << yaml << " gave: " << e;
    EXPECT_EQ(e.rfind("--web-config-file /etc/joules/web.yml: ", 0), 0U) << e;
  }
}

TEST(WebConfig, DeepNestingIsAnErrorNotACrash) {
  EXPECT_NE(web_config_error(std::string(100000, '[')).find("nested too deep"), std::string::npos);
  EXPECT_NE(web_config_error("a: " + std::string(50000, '[')).find("nested too deep"),
            std::string::npos);
}

TEST(WebConfig, LoadingNamesTheFileThatCannotBeRead) {
  try {
    load_web_config("/nonexistent/web.yml");
    FAIL() << "no error";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(),
                 "--web-config-file /nonexistent/web.yml: cannot read the file "
                 "/nonexistent/web.yml: No such file or directory");
  }
}

TEST(WebConfig, BcryptHashShapes) {
  EXPECT_TRUE(is_bcrypt_hash(kWebConfigHash));
  EXPECT_TRUE(is_bcrypt_hash("$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_TRUE(is_bcrypt_hash("$2a$31$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_FALSE(is_bcrypt_hash("$2x$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$03$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$32$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7z"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$10$X0h1gDsPszWURQaxFh+zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_FALSE(is_bcrypt_hash("$1$abc$OGyl6dDvZCDiGmIVbeuCq/"));
  EXPECT_FALSE(is_bcrypt_hash("plain"));
}

TEST(BasicCredentials, DecodesRfc7617) {
  using creds = std::pair<std::string, std::string>;
  EXPECT_EQ(decode_basic_credentials("Basic YWxpY2U6czNjcmV0"), (creds{"alice", "s3cret"}));
  EXPECT_EQ(decode_basic_credentials("basic   YWxpY2U6czNjcmV0"), (creds{"alice", "s3cret"}));
  EXPECT_EQ(decode_basic_credentials("BASIC YWxpY2U6"), (creds{"alice", ""}));
  EXPECT_EQ(decode_basic_credentials("Basic YTpiOmM="), (creds{"a", "b:c"}));  // first colon
  EXPECT_FALSE(decode_basic_credentials(""));
  EXPECT_FALSE(decode_basic_credentials("Basic"));
  EXPECT_FALSE(decode_basic_credentials("Basic "));
  EXPECT_FALSE(decode_basic_credentials("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(decode_basic_credentials("BasicYWxpY2U6czNjcmV0"));
  EXPECT_FALSE(decode_basic_credentials("Basic YWxpY2U="));         // no colon
  EXPECT_FALSE(decode_basic_credentials("Basic YWxpY2U6czNjcmV"));  // not a multiple of 4
  EXPECT_FALSE(decode_basic_credentials("Basic YW=pY2U6"));         // data after padding
  EXPECT_FALSE(decode_basic_credentials("Basic YWxp*2U6"));
}

TEST(BasicAuth, ChecksBcryptOnceForTheSameCredentials) {
  basic_auth auth({{"alice", kWebConfigHash}}, "web.yml");
  EXPECT_TRUE(auth.allows("Basic YWxpY2U6czNjcmV0"));  // alice:s3cret
  EXPECT_EQ(auth.bcrypt_calls(), 1U);
  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(auth.allows("Basic YWxpY2U6czNjcmV0"));
  EXPECT_EQ(auth.bcrypt_calls(), 1U);           // cached
  EXPECT_FALSE(auth.allows("Basic YWxpY2U6"));  // alice with no password
  EXPECT_FALSE(auth.allows("Basic YWxpY2U6"));
  EXPECT_EQ(auth.bcrypt_calls(), 2U);  // bad answers are cached too
  // An unknown user costs a bcrypt as a known one does, and is refused even with alice's password.
  EXPECT_FALSE(auth.allows("Basic Ym9iOnMzY3JldA=="));  // bob:s3cret
  EXPECT_EQ(auth.bcrypt_calls(), 3U);
  EXPECT_FALSE(auth.allows(""));
  EXPECT_FALSE(auth.allows("Basic !!!!"));
  EXPECT_EQ(auth.bcrypt_calls(), 3U);  // nothing to check
}

TEST(BasicAuth, TheServersCheckNeverWaitsForBcrypt) {
  basic_auth auth({{"alice", kWebConfigHash}}, "web.yml");
  EXPECT_EQ(auth.check("Basic YWxpY2U6czNjcmV0"), basic_auth::verdict::pending);
  // Asked again before or after the bcrypt thread answered: never a second bcrypt (below).
  EXPECT_NE(auth.check("Basic YWxpY2U6czNjcmV0"), basic_auth::verdict::deny);
  EXPECT_EQ(auth.check(""), basic_auth::verdict::deny);  // nothing to check: at once
  pollfd p{auth.ready_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  auth.take_ready();
  EXPECT_EQ(auth.check("Basic YWxpY2U6czNjcmV0"), basic_auth::verdict::allow);
  EXPECT_EQ(auth.bcrypt_calls(), 1U);
}

TEST(BasicAuth, NoUsersAllowsEveryone) {
  basic_auth auth({}, "web.yml");
  EXPECT_TRUE(auth.allows(""));
}

TEST(HttpRequestAuthorization, IsKeptAndTwoAreRefused) {
  const http::parser_limits limits{};
  const auto one = http::parse_request(
      "GET /metrics HTTP/1.1\r\nHost: a\r\nAuthorization: Basic YWxpY2U6czNjcmV0 \r\n\r\n", limits);
  ASSERT_EQ(one.status, http::parse_status::complete);
  EXPECT_EQ(one.head.authorization, "Basic YWxpY2U6czNjcmV0");
  const auto none = http::parse_request("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", limits);
  EXPECT_TRUE(none.head.authorization.empty());
  const auto two = http::parse_request(
      "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic a\r\nauthorization: Basic b\r\n\r\n",
      limits);
  EXPECT_EQ(two.status, http::parse_status::error);
  EXPECT_EQ(two.error_status, 400);
}

TEST(HttpResponse, UnauthorizedAsksForBasicAndCarriesTheConfiguredHeaders) {
  std::string out;
  http::append_error_response(out, 401, "Thu, 01 Jan 2026 00:00:00 GMT", false,
                              "X-Frame-Options: deny\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0U) << out;
  EXPECT_NE(out.find("\r\nWWW-Authenticate: Basic\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Frame-Options: deny\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace joules::exporter
