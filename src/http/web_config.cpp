#include "http/web_config.hpp"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "http/yaml_library.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

// The file is a few lines; anything far larger is not one.
constexpr std::size_t kMaxWebConfigBytes = 1 << 20;
constexpr std::size_t kMaxWebConfigDepth = 16;

// A YAML node as the web configuration uses them: a text, a mapping or a sequence.
struct yaml_node {
  enum class kind { scalar, mapping, sequence } type = kind::scalar;
  std::string text;
  bool null = false;  // a plain empty, "~" or "null" scalar
  std::size_t line = 0;
  std::vector<std::string> keys;  // mapping: keys[i] names items[i]
  std::vector<yaml_node> items;
};

[[noreturn]] void web_config_fail(const std::string& file, std::size_t line,
                                  const std::string& what) {
  if (line == 0) throw usage_error(fmt::format("--web-config-file {}: {}", file, what));
  throw usage_error(fmt::format("--web-config-file {}: line {}: {}", file, line, what));
}

bool is_yaml_null(const yaml_event_t& e, std::string_view text) {
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// Reads the whole stream into a tree with libyaml's event parser (no recursion: a deep nest
// cannot exhaust the stack), refusing aliases, more than one document, and nesting deeper than
// kMaxWebConfigDepth.
yaml_node read_yaml_tree(std::string_view text, const std::string& file) {
  std::string why;
  const yaml_library* y = load_yaml(&why);
  if (y == nullptr) web_config_fail(file, 0, why);
  yaml_parser_t parser;
  if (y->parser_initialize(&parser) == 0) web_config_fail(file, 0, "out of memory");
  const std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, y->parser_delete);
  y->parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                             text.size());
  yaml_node root;
  root.null = true;
  bool have_root = false;
  std::vector<yaml_node*> open;
  int documents = 0;
  for (bool done = false; !done;) {
    yaml_event_t e;
    if (y->parser_parse(&parser, &e) == 0) {
      const std::size_t line = parser.problem_mark.line + 1;
      web_config_fail(file, line,
                      fmt::format("not YAML: {}", parser.problem ? parser.problem : "parse error"));
    }
    const std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> event(&e, y->event_delete);
    const std::size_t line = e.start_mark.line + 1;
    yaml_node node;
    node.line = line;
    bool is_node = false;
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      case YAML_DOCUMENT_START_EVENT:
        if (++documents > 1) web_config_fail(file, line, "more than one YAML document");
        break;
      case YAML_ALIAS_EVENT:
        web_config_fail(file, line, "YAML aliases are not accepted here");
      case YAML_SCALAR_EVENT: {
        node.text.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        node.null = is_yaml_null(e, node.text);
        is_node = true;
        break;
      }
      case YAML_MAPPING_START_EVENT:
        node.type = yaml_node::kind::mapping;
        is_node = true;
        break;
      case YAML_SEQUENCE_START_EVENT:
        node.type = yaml_node::kind::sequence;
        is_node = true;
        break;
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        if (!open.empty()) open.pop_back();
        break;
      default:
        break;
    }
    if (!is_node) continue;
    yaml_node* placed = nullptr;
    if (open.empty()) {
      if (have_root) web_config_fail(file, line, "more than one YAML document");
      root = std::move(node);
      have_root = true;
      placed = &root;
    } else {
      yaml_node& parent = *open.back();
      const bool is_key =
          parent.type == yaml_node::kind::mapping && parent.keys.size() == parent.items.size();
      if (is_key) {
        if (node.type != yaml_node::kind::scalar) web_config_fail(file, line, "a key must be text");
        if (std::find(parent.keys.begin(), parent.keys.end(), node.text) != parent.keys.end())
          web_config_fail(file, line, fmt::format("'{}' is given twice", node.text));
        parent.keys.push_back(std::move(node.text));
        continue;
      }
      parent.items.push_back(std::move(node));
      placed = &parent.items.back();
    }
    if (placed->type != yaml_node::kind::scalar) {
      if (open.size() >= kMaxWebConfigDepth) web_config_fail(file, line, "nested too deep");
      open.push_back(placed);  // stays valid: only the innermost open node grows
    }
  }
  return root;
}

std::string_view kind_name(const yaml_node& n) {
  switch (n.type) {
    case yaml_node::kind::mapping:
      return "a mapping";
    case yaml_node::kind::sequence:
      return "a list";
    default:
      return "a text";
  }
}

// The file and what it is reading, for messages.
struct web_config_reader {
  const std::string& file;
  std::string dir;  // of the file, with a trailing '/', or empty

  [[noreturn]] void fail(const yaml_node& at, const std::string& what) const {
    web_config_fail(file, at.line, what);
  }
  // Mapping entries; a null value is an empty mapping (as the toolkit's Go YAML reads it).
  void expect_mapping(const yaml_node& n, std::string_view name) const {
    if (n.null || n.type == yaml_node::kind::mapping) return;
    fail(n, fmt::format("{} must be a mapping, not {}", name, kind_name(n)));
  }
  std::string text(const yaml_node& n, std::string_view name) const {
    if (n.type != yaml_node::kind::scalar)
      fail(n, fmt::format("{} must be a text, not {}", name, kind_name(n)));
    return n.null ? std::string() : n.text;
  }
  bool boolean(const yaml_node& n, std::string_view name) const {
    const std::string t = text(n, name);
    if (t == "true" || t == "True" || t == "TRUE") return true;
    if (t == "false" || t == "False" || t == "FALSE") return false;
    fail(n, fmt::format("{} '{}': expected true or false", name, t));
  }
  std::vector<std::string> texts(const yaml_node& n, std::string_view name) const {
    if (n.null) return {};
    if (n.type != yaml_node::kind::sequence)
      fail(n, fmt::format("{} must be a list, not {}", name, kind_name(n)));
    std::vector<std::string> out;
    for (const yaml_node& item : n.items)
      out.push_back(text(item, name));
    return out;
  }
  std::string path(const yaml_node& n, std::string_view name) const {
    std::string p = text(n, name);
    if (!p.empty() && p.front() != '/') p = dir + p;
    return p;
  }
};

int tls_version(const web_config_reader& r, const yaml_node& n, std::string_view name) {
  const std::string t = r.text(n, name);
  constexpr std::array<std::pair<std::string_view, int>, 4> kVersions = {
      {{"TLS10", 0x0301}, {"TLS11", 0x0302}, {"TLS12", 0x0303}, {"TLS13", 0x0304}}};
  for (const auto& [v, code] : kVersions) {
    if (t == v) return code;
  }
  r.fail(n, fmt::format("{} '{}': expected TLS10, TLS11, TLS12 or TLS13", name, t));
}

client_auth client_auth_of(const web_config_reader& r, const yaml_node& n) {
  const std::string t = r.text(n, "client_auth_type");
  if (t.empty() || t == "NoClientCert") return client_auth::none;
  if (t == "RequestClientCert") return client_auth::request;
  // RequireClientCert: the toolkit's older name for RequireAnyClientCert.
  if (t == "RequireAnyClientCert" || t == "RequireClientCert") return client_auth::require_any;
  if (t == "VerifyClientCertIfGiven") return client_auth::verify_if_given;
  if (t == "RequireAndVerifyClientCert") return client_auth::require_and_verify;
  r.fail(n, fmt::format("client_auth_type '{}': expected NoClientCert, RequestClientCert, "
                        "RequireAnyClientCert, VerifyClientCertIfGiven or "
                        "RequireAndVerifyClientCert",
                        t));
}

// Go's names of the curves (crypto/tls CurveID) as OpenSSL names its groups.
std::string curve_of(const web_config_reader& r, const yaml_node& at, const std::string& name) {
  if (name == "CurveP256") return "P-256";
  if (name == "CurveP384") return "P-384";
  if (name == "CurveP521") return "P-521";
  if (name == "X25519") return "X25519";
  r.fail(at, fmt::format("curve_preferences '{}': expected CurveP256, CurveP384, CurveP521 or "
                         "X25519",
                         name));
}

void read_tls(const web_config_reader& r, const yaml_node& n, web_config& out) {
  r.expect_mapping(n, "tls_server_config");
  tls_settings& t = out.tls_server;
  const yaml_node* where = &n;
  for (std::size_t i = 0; i < n.keys.size(); ++i) {
    const std::string& k = n.keys[i];
    const yaml_node& v = n.items[i];
    if (k == "cert") {
      t.cert.text = r.text(v, k);
    } else if (k == "key") {
      t.key.text = r.text(v, k);
    } else if (k == "client_ca") {
      t.client_ca.text = r.text(v, k);
    } else if (k == "cert_file") {
      t.cert.file = r.path(v, k);
    } else if (k == "key_file") {
      t.key.file = r.path(v, k);
    } else if (k == "client_ca_file") {
      t.client_ca.file = r.path(v, k);
    } else if (k == "client_auth_type") {
      t.auth = client_auth_of(r, v);
      where = &v;
    } else if (k == "min_version") {
      t.min_version = tls_version(r, v, k);
    } else if (k == "max_version") {
      t.max_version = tls_version(r, v, k);
    } else if (k == "cipher_suites") {
      t.cipher_suites = r.texts(v, k);
    } else if (k == "prefer_server_cipher_suites") {
      t.prefer_server_cipher_suites = r.boolean(v, k);
    } else if (k == "curve_preferences") {
      for (const std::string& c : r.texts(v, k))
        t.curves.push_back(curve_of(r, v, c));
    } else if (k == "client_allowed_sans") {
      r.fail(v,
             "client_allowed_sans is not supported by joules serve; use a client CA of its "
             "own for the scrapers (client_ca_file)");
    } else {
      r.fail(v, fmt::format("unknown key '{}' in tls_server_config", k));
    }
  }
  // As the toolkit: any of these turns TLS on, and then a certificate and its key are needed.
  out.tls = t.cert.given() || t.key.given() || t.client_ca.given() || t.auth != client_auth::none;
  if (!out.tls) return;
  if (!t.cert.given()) r.fail(n, "tls_server_config needs cert_file (or cert)");
  if (!t.key.given()) r.fail(n, "tls_server_config needs key_file (or key)");
  if (!t.cert.text.empty() && !t.cert.file.empty()) r.fail(n, "give cert or cert_file, not both");
  if (!t.key.text.empty() && !t.key.file.empty()) r.fail(n, "give key or key_file, not both");
  if (!t.client_ca.text.empty() && !t.client_ca.file.empty())
    r.fail(n, "give client_ca or client_ca_file, not both");
  if (t.client_ca.given() && t.auth == client_auth::none)
    r.fail(n,
           "client_ca_file is given but client_auth_type is NoClientCert; set it to "
           "RequireAndVerifyClientCert to authenticate scrapers by certificate");
  const bool verifies =
      t.auth == client_auth::verify_if_given || t.auth == client_auth::require_and_verify;
  if (verifies && !t.client_ca.given())
    r.fail(*where, "client_auth_type verifies client certificates: it needs client_ca_file");
  if (t.min_version > t.max_version) r.fail(n, "min_version is above max_version");
}

bool is_header_value_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

void read_http(const web_config_reader& r, const yaml_node& n, web_config& out) {
  r.expect_mapping(n, "http_server_config");
  for (std::size_t i = 0; i < n.keys.size(); ++i) {
    const std::string& k = n.keys[i];
    const yaml_node& v = n.items[i];
    if (k == "http2") {
      r.boolean(v, k);  // joules serves HTTP/1.1, which every scraper speaks
      continue;
    }
    if (k != "headers") r.fail(v, fmt::format("unknown key '{}' in http_server_config", k));
    r.expect_mapping(v, "headers");
    for (std::size_t j = 0; j < v.keys.size(); ++j) {
      const std::string& name = v.keys[j];
      const std::string value = r.text(v.items[j], name);
      // The five the toolkit allows, two of them with fixed values.
      std::vector<std::string_view> allowed;
      if (name == "X-Content-Type-Options") {
        allowed = {"nosniff"};
      } else if (name == "X-Frame-Options") {
        allowed = {"deny", "sameorigin"};
      } else if (name != "Strict-Transport-Security" && name != "X-XSS-Protection" &&
                 name != "Content-Security-Policy") {
        r.fail(v.items[j], fmt::format("the header '{}' cannot be set; expected "
                                       "Strict-Transport-Security, X-Content-Type-Options, "
                                       "X-Frame-Options, X-XSS-Protection or "
                                       "Content-Security-Policy",
                                       name));
      }
      if (value.empty()) continue;  // unset if blank
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), value) == allowed.end())
        r.fail(v.items[j],
               fmt::format("{} '{}': expected {}", name, value, fmt::join(allowed, " or ")));
      if (!std::all_of(value.begin(), value.end(), is_header_value_char))
        r.fail(v.items[j], fmt::format("{}: a header value is one line of text", name));
      out.headers.emplace_back(name, value);
    }
  }
}

void read_users(const web_config_reader& r, const yaml_node& n, web_config& out) {
  r.expect_mapping(n, "basic_auth_users");
  for (std::size_t i = 0; i < n.keys.size(); ++i) {
    const std::string& user = n.keys[i];
    const std::string hash = r.text(n.items[i], user);
    // RFC 7617 §2: the user-id cannot hold a colon; nor a control character.
    if (user.empty() || user.find(':') != std::string::npos ||
        !std::all_of(user.begin(), user.end(), is_header_value_char))
      r.fail(n.items[i], "a basic_auth_users name is a non-empty text without ':'");
    if (!is_bcrypt_hash(hash))
      r.fail(n.items[i], fmt::format("the password of '{}' is not a bcrypt hash ($2y$10$ and 53 "
                                     "characters; htpasswd -nBC 10 \"\" makes one)",
                                     user));
    out.users.emplace_back(user, hash);
  }
}

std::string read_text_file(const std::string& path, std::string_view what,
                           const std::string& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    web_config_fail(config, 0,
                    fmt::format("cannot read {} {}: {}", what, path,
                                err != 0 ? std::strerror(err) : "cannot open"));
  }
  std::string out;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > kMaxWebConfigBytes)
      web_config_fail(config, 0, fmt::format("{} {} is larger than 1 MiB", what, path));
  }
  if (in.bad()) web_config_fail(config, 0, fmt::format("cannot read {} {}", what, path));
  return out;
}

}  // namespace

bool is_bcrypt_hash(std::string_view h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(h.begin() + 7, h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '/';
  });
}

web_config parse_web_config(std::string_view yaml, const std::string& file) {
  if (yaml.size() > kMaxWebConfigBytes) web_config_fail(file, 0, "larger than 1 MiB");
  const yaml_node root = read_yaml_tree(yaml, file);
  web_config_reader r{file, {}};
  const auto slash = file.rfind('/');
  if (slash != std::string::npos) r.dir = file.substr(0, slash + 1);
  web_config out;
  if (root.null) return out;  // an empty file: plain HTTP, no users, as the toolkit
  r.expect_mapping(root, "the file");
  for (std::size_t i = 0; i < root.keys.size(); ++i) {
    const std::string& k = root.keys[i];
    const yaml_node& v = root.items[i];
    if (k == "tls_server_config") {
      read_tls(r, v, out);
    } else if (k == "http_server_config") {
      read_http(r, v, out);
    } else if (k == "basic_auth_users") {
      read_users(r, v, out);
    } else if (k == "rate_limit") {
      r.fail(v,
             "rate_limit is not supported by joules serve (--max-connections bounds "
             "what one client may hold)");
    } else {
      r.fail(v, fmt::format("unknown key '{}'; expected tls_server_config, http_server_config "
                            "or basic_auth_users",
                            k));
    }
  }
  return out;
}

web_config load_web_config(const std::string& file, std::vector<std::string>* files) {
  web_config c = parse_web_config(read_text_file(file, "the file", file), file);
  if (files != nullptr) {
    files->assign({file});
    for (const pem_source* pem : {&c.tls_server.cert, &c.tls_server.key, &c.tls_server.client_ca}) {
      if (!pem->file.empty()) files->push_back(pem->file);
    }
  }
  for (auto [pem, what] :
       {std::pair{&c.tls_server.cert, "cert_file"}, std::pair{&c.tls_server.key, "key_file"},
        std::pair{&c.tls_server.client_ca, "client_ca_file"}}) {
    if (!pem->file.empty()) pem->text = read_text_file(pem->file, what, file);
  }
  return c;
}

}  // namespace joules::exporter
