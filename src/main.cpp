#include "cli/app.hpp"

int main(int argc, char** argv) {
  return joules::app::main(argc, argv);
}
