// The programs the audit tests run as adapters: python3 with the example adapters of examples/adapters/
// and the fault adapter tests/adapters/fault.py (one misbehaviour per mode: hang, crash, garbage, batched,
// stacked, ...). For test programs built with PERMCHECK_SOURCE_DIR (tests/CMakeLists.txt).
#pragma once

#include <string>

namespace permcheck::test {

inline const std::string kPython = "python3";
inline const std::string kSource = PERMCHECK_SOURCE_DIR;
inline const std::string kFault = kPython + " " + kSource + "/tests/adapters/fault.py";

}  // namespace permcheck::test
