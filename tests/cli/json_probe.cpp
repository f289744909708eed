// json_probe FILE [/json/pointer=VALUE ...]
// Test helper: FILE must hold one JSON document; each pointer must exist and
// its value, dumped as JSON (strings with quotes), must equal VALUE.
// "/pointer~=X" wants a number within 1e-9 relative of X, "/pointer>=X" and
// "/pointer<=X" a number at least or at most X.
// A "/pointer" without an operator only has to exist. Exit 0 on success, 1 otherwise.

#include <cmath>
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
    auto eq = arg.find('=');
    std::string op = "=";
    if (eq != std::string::npos && eq > 0 && std::string("~<>").find(arg[eq - 1]) != std::string::npos) {
      op = arg.substr(eq - 1, 2);
      --eq;
    }
    const nlohmann::json::json_pointer ptr(arg.substr(0, eq));
    if (!j.contains(ptr)) {
      std::cerr << "missing " << ptr.to_string() << "\n";
      ++bad;
      continue;
    }
    if (eq == std::string::npos) continue;
    const std::string want = arg.substr(eq + op.size());
    const nlohmann::json& v = j.at(ptr);
    bool ok = false;
    if (op == "=") {
      ok = v.dump() == want;
    } else if (v.is_number()) {
      const double x = v.get<double>();
      const double w = std::stod(want);
      ok = op == "~=" ? std::fabs(x - w) <= 1e-9 * std::fabs(w) : op == ">=" ? x >= w : x <= w;
    }
    if (!ok) {
      std::cerr << ptr.to_string() << " is " << v.dump() << ", expected " << op << " " << want << "\n";
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}
