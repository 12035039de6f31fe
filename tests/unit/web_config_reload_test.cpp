// serve --web-config-file read again when it changes (http/web_config_reload.hpp): the stamps a
// change is seen by, the check at most once per interval, a good change taken, a bad one refused
// once with the last good configuration kept, and basic auth's users replaced in place.

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "http/basic_auth.hpp"
#include "http/web_config_reload.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

// bcrypt at cost 4 (the least) of "s3cret" and of "n3w-pass".
constexpr const char* kReloadOldHash =
    "$2b$04$nXlefLb8iV.FxJAKB8biu.tEAsCxfybHxVaF92iUqbY3kXG2Iqh5O";
constexpr const char* kReloadNewHash =
    "$2b$04$///mLs32GcxrLhxXIxKBoeNUPMRWkXm4bJKDGp7MP3lNcwyjTcqNu";
constexpr const char* kReloadOldCredentials = "Basic YWxpY2U6czNjcmV0";      // alice:s3cret
constexpr const char* kReloadNewCredentials = "Basic YWxpY2U6bjN3LXBhc3M=";  // alice:n3w-pass

// A directory of its own, removed with what it holds.
class reload_dir {
 public:
  reload_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "joules-reload-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = pattern;
  }
  ~reload_dir() { std::filesystem::remove_all(path_); }
  reload_dir(const reload_dir&) = delete;
  reload_dir& operator=(const reload_dir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Written whole under another name and renamed over `name`, as editors and certbot do.
  void write(const std::string& name, const std::string& text) const {
    const std::string tmp = file(name + ".tmp");
    std::ofstream(tmp, std::ios::binary | std::ios::trunc) << text;
    std::filesystem::rename(tmp, file(name));
  }

 private:
  std::filesystem::path path_;
};

std::string reload_users_yaml(const char* hash) {
  return std::string("basic_auth_users:\n  alice: ") + hash +
         "\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n";
}

struct reload_notices {
  std::vector<std::pair<bool, std::string>> lines;
  web_config_reloader::notice_fn fn() {
    return [this](bool failed, const std::string& line) { lines.emplace_back(failed, line); };
  }
};

TEST(FileStamp, TellsARewriteARenameAndAMissingFile) {
  reload_dir d;
  d.write("a", "one");
  const file_stamp first = stamp_of(d.file("a"));
  EXPECT_EQ(first.error, 0);
  EXPECT_EQ(first.size, 3);
  EXPECT_EQ(stamp_of(d.file("a")), first);  // nothing changed, nothing seen
  d.write("a", "two");                      // same size, a new inode
  EXPECT_NE(stamp_of(d.file("a")), first);
  EXPECT_NE(stamp_of(d.file("missing")).error, 0);
}

TEST(WebConfigReload, AtStartABadFileIsAUsageError) {
  reload_dir d;
  d.write("web.yml", "basic_auth_users:\n  alice: not-a-hash\n");
  reload_notices n;
  EXPECT_THROW(web_config_reloader(d.file("web.yml"), n.fn()), usage_error);
  EXPECT_THROW(web_config_reloader(d.file("absent.yml"), n.fn()), usage_error);
  EXPECT_TRUE(n.lines.empty());
}

TEST(WebConfigReload, LooksAtMostOncePerIntervalAndTakesAGoodChange) {
  reload_dir d;
  d.write("web.yml", reload_users_yaml(kReloadOldHash));
  reload_notices n;
  const auto interval = std::chrono::milliseconds(1000);
  web_config_reloader r(d.file("web.yml"), n.fn(), interval);
  ASSERT_TRUE(r.auth());
  EXPECT_FALSE(r.tls_enabled());
  EXPECT_EQ(r.headers(), "X-Frame-Options: deny\r\n");
  const std::shared_ptr<basic_auth> auth = r.auth();
  EXPECT_TRUE(auth->allows(kReloadOldCredentials));

  const mono_time t0 = steady::now();
  EXPECT_FALSE(r.refresh(t0 + 2 * interval));  // nothing changed
  d.write("web.yml", reload_users_yaml(kReloadNewHash));
  EXPECT_FALSE(r.refresh(t0 + 2 * interval + interval / 2));  // changed, but not looked at yet
  EXPECT_TRUE(r.refresh(t0 + 4 * interval));
  EXPECT_TRUE(r.last_reload_successful());
  EXPECT_EQ(r.reloads(), 1U);
  EXPECT_EQ(r.auth(), auth);  // the same checker, with new users: waiting requests re-check
  EXPECT_FALSE(auth->allows(kReloadOldCredentials));
  EXPECT_TRUE(auth->allows(kReloadNewCredentials));
  ASSERT_EQ(n.lines.size(), 1U);
  EXPECT_FALSE(n.lines[0].first);
  EXPECT_NE(n.lines[0].second.find("read again"), std::string::npos) << n.lines[0].second;
}

TEST(WebConfigReload, ABadChangeKeepsTheLastGoodOneAndIsSaidOnce) {
  reload_dir d;
  d.write("web.yml", reload_users_yaml(kReloadOldHash));
  reload_notices n;
  const auto interval = std::chrono::milliseconds(10);
  web_config_reloader r(d.file("web.yml"), n.fn(), interval);
  const std::shared_ptr<basic_auth> auth = r.auth();
  mono_time t = steady::now();
  const auto later = [&] { return t += 2 * interval; };

  d.write("web.yml", "basic_auth_users:\n  alice: [not, a, hash]\n");
  EXPECT_FALSE(r.refresh(later()));
  EXPECT_FALSE(r.last_reload_successful());
  EXPECT_FALSE(r.refresh(later()));  // the same bad file: not read, not said again
  EXPECT_EQ(r.failures(), 1U);
  ASSERT_EQ(n.lines.size(), 1U);
  EXPECT_TRUE(n.lines[0].first);
  EXPECT_NE(n.lines[0].second.find("web.yml: line 2"), std::string::npos) << n.lines[0].second;
  EXPECT_NE(n.lines[0].second.find("last good configuration"), std::string::npos);
  EXPECT_TRUE(auth->allows(kReloadOldCredentials));  // still served as before
  EXPECT_EQ(r.headers(), "X-Frame-Options: deny\r\n");

  // Forced (SIGHUP): read again, and said again, though nothing changed.
  EXPECT_FALSE(r.refresh(later(), /*force=*/true));
  EXPECT_EQ(n.lines.size(), 2U);

  // A file it names that cannot be read: refused too.
  d.write("web.yml", "tls_server_config:\n  cert_file: absent.pem\n  key_file: absent.key\n");
  EXPECT_FALSE(r.refresh(later()));
  ASSERT_EQ(n.lines.size(), 3U);
  EXPECT_NE(n.lines[2].second.find("absent.pem"), std::string::npos) << n.lines[2].second;

  // Fixed: in force.
  d.write("web.yml", reload_users_yaml(kReloadNewHash));
  EXPECT_TRUE(r.refresh(later()));
  EXPECT_TRUE(r.last_reload_successful());
  EXPECT_TRUE(auth->allows(kReloadNewCredentials));
  EXPECT_FALSE(auth->allows(kReloadOldCredentials));
}

TEST(WebConfigReload, UsersMayComeAndGo) {
  reload_dir d;
  d.write("web.yml", "");
  reload_notices n;
  const auto interval = std::chrono::milliseconds(10);
  web_config_reloader r(d.file("web.yml"), n.fn(), interval);
  EXPECT_FALSE(r.auth());  // no users: nothing loaded for them
  mono_time t = steady::now();
  d.write("web.yml", reload_users_yaml(kReloadOldHash));
  ASSERT_TRUE(r.refresh(t += 2 * interval));
  ASSERT_TRUE(r.auth());
  EXPECT_FALSE(r.auth()->allows(""));
  EXPECT_TRUE(r.auth()->allows(kReloadOldCredentials));
  d.write("web.yml", "{}\n");
  ASSERT_TRUE(r.refresh(t += 2 * interval));
  EXPECT_TRUE(r.auth()->allows(""));  // no users any more: no authentication
}

TEST(BasicAuth, NewUsersDropTheCacheAndWakeTheWaitingRequests) {
  basic_auth auth({{"alice", kReloadOldHash}}, "web.yml");
  EXPECT_TRUE(auth.allows(kReloadOldCredentials));
  const std::size_t calls = auth.bcrypt_calls();
  auth.replace_users({{"alice", kReloadOldHash}});  // the same users: the cache stays
  EXPECT_TRUE(auth.allows(kReloadOldCredentials));
  EXPECT_EQ(auth.bcrypt_calls(), calls);
  // A check queued, then the users change under it: the waiting request is woken and asked again.
  EXPECT_EQ(auth.check(kReloadNewCredentials), basic_auth::verdict::pending);
  auth.replace_users({{"alice", kReloadNewHash}});
  pollfd p{auth.ready_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  auth.take_ready();
  EXPECT_TRUE(auth.allows(kReloadNewCredentials));
  EXPECT_FALSE(auth.allows(kReloadOldCredentials));
}

}  // namespace
}  // namespace joules::exporter
