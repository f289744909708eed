#pragma once
// An output file written whole or not at all.
//
// The content goes to a file of its own beside the target, NAME.part-XXXXXX
// (mkstemp: a name no one can guess, created exclusively, so a link or file
// planted there is never followed or overwritten), and is renamed onto the
// target once complete. Until then the file is listed where SIGINT, SIGTERM
// and SIGHUP find it: their handler (installed where the signal would
// otherwise end the process) removes every listed file before the process
// ends as the signal would have ended it. A failure part way leaves no
// file, and an earlier file of the target's name stands.

#include <memory>
#include <ostream>
#include <string>

namespace meshsim::cli {

class PartialFile {
 public:
  /// Creates the file beside `target` (UsageError naming `target` when it
  /// cannot).
  explicit PartialFile(std::string target);
  /// Removes the file unless commit() renamed it.
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  [[nodiscard]] std::ostream& stream();
  /// Flushes, gives the file the permissions a new file gets (0666 less the
  /// umask) and renames it onto the target (UsageError on failure).
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshsim::cli
