// json_probe FILE [/json/pointer=VALUE ...]
// Test helper: FILE must hold one JSON document; each pointer must exist and
// its value, dumped as JSON (strings with quotes), must equal VALUE.
// A "/pointer" without "=" only has to exist. Exit 0 on success, 1 otherwise.

#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: json_probe FILE [/pointer=VALUE ...]\n";
    return 1;
  }
  std::ifstream in(argv[1]);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::cerr << "not one JSON document: " << e.what() << "\n";
    return 1;
  }
  int bad = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const nlohmann::json::json_pointer ptr(arg.substr(0, eq));
    if (!j.contains(ptr)) {
      std::cerr << "missing " << ptr.to_string() << "\n";
      ++bad;
      continue;
    }
    if (eq == std::string::npos) continue;
    const std::string got = j.at(ptr).dump();
    if (got != arg.substr(eq + 1)) {
      std::cerr << ptr.to_string() << " is " << got << ", expected " << arg.substr(eq + 1) << "\n";
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}
