#pragma once

namespace joules::app {

// The whole program: parses the subcommand, runs it, and turns every error into one line on
// stderr ("joules: error: ...") and an exit status.  Nothing else prints errors or exits.
int main(int argc, char** argv);

}  // namespace joules::app
