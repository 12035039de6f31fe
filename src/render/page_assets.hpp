#pragma once
// The style sheet and the script of the HTML report (render/report_html.hpp), inline in the page
// so that it needs no network.  The script only adds: a cursor and the values of every line under
// the pointer; the page reads the same without it.  Pure.

#include <string_view>

namespace joules::render {

std::string_view page_css();
std::string_view page_script();

}  // namespace joules::render
