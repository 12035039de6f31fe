#pragma once
// libcurl, opened with dlopen at the first OTLP push instead of linked: the programs and
// libraries that never push (libjoules, the Python module, `joules run` without --otlp) do not
// load it, and joules runs on machines that lack it.  Only its header is needed to build.
//
// The functions joules calls, resolved from libcurl.so.4 (or Debian's libcurl-gnutls.so.4): the
// multi interface needs libcurl 7.68 or newer (curl_multi_poll 7.66, curl_multi_wakeup 7.68).

#include <curl/curl.h>

#include <string>

namespace joules::exporter {

struct curl_library {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_wakeup) multi_wakeup;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_multi_strerror) multi_strerror;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_getdate) getdate;
  std::string path;  // the file it was opened from
};

// libcurl, opened once per process (later calls return the same); nullptr when this machine
// has none with every function above, and then *why (when given) says what was missing.
const curl_library* load_curl(std::string* why = nullptr);

}  // namespace joules::exporter
