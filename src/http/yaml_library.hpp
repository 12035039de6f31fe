#pragma once
// libyaml, opened with dlopen when a web configuration file is read (`serve --web-config-file`)
// instead of linked: the programs and libraries that never read one (libjoules, the Python
// module, every other command) do not load it.  Only its header is needed to build.

#include <yaml.h>

#include <string>

namespace joules::exporter {

struct yaml_library {
  decltype(&::yaml_parser_initialize) parser_initialize;
  decltype(&::yaml_parser_set_input_string) parser_set_input_string;
  decltype(&::yaml_parser_parse) parser_parse;
  decltype(&::yaml_parser_delete) parser_delete;
  decltype(&::yaml_event_delete) event_delete;
};

// libyaml-0.so.2, opened once per process (later calls return the same); nullptr when this
// machine has none, and then *why (when given) says what to install.
const yaml_library* load_yaml(std::string* why = nullptr);

}  // namespace joules::exporter
