// The text of an in-process audit's result, for the C++ API (<permcheck/audit.h>) and the GoogleTest macros
// (<permcheck/gtest.h>). Compiled into the library, not inline: the stream formatting and the copies of a result
// they make cost every test file that includes the API a second of -O3 (bench/consumer_compile_time.sh).
#pragma once

#include "check/blackbox.h"
#include "check/signature.h"

#include <string>

namespace permcheck {

// The options a result came from, as the line a failing test prints so it can be run again; explain() fills in
// the dtype the audit used, so the hint judges as the audit did.
std::string replay_hint(const AuditOptions& o);
// A readable account of a result: the verdict, what was found, and the shrunk counterexample (describe()).
std::string explain(const AuditResult& r, const AuditOptions& given);

// The signature as the command line writes it, for a replay hint.
std::string signature_flags(const Signature& s);
// A readable account of a signature audit's result: the verdict, what was found, the shrunk counterexample
// (describe(c, s)) and the options that find it again.
std::string explain(const AuditResult& r, const Signature& signature, const AuditOptions& o);

}  // namespace permcheck
