#include "runtime/dynlib.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "core/error.h"

namespace meshsim::runtime {

DynLib::DynLib(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    handle_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      name_ = n;
      return;
    }
    const char* e = dlerror();
    error_ += fmt::format("{}{}", error_.empty() ? "" : "; ", e != nullptr ? e : n.c_str());
  }
}

DynLib::~DynLib() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* DynLib::symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

void* DynLib::required(const char* name) const {
  void* s = symbol(name);
  if (s == nullptr)
    throw UsageError(fmt::format("{} has no symbol {}", name_.empty() ? "library" : name_, name));
  return s;
}

}  // namespace meshsim::runtime
