// The meshsim command line (tools/cli/main.cpp has the commands and the exit
// codes: 0 success, 1 bytes did not verify, 2 bad input, 3 a bug).

#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  return meshsim::cli::run_cli(argc, argv);
}
