// A reproduction without permcheck of an adapter program's finding: repro.py, requests.jsonl and
// permcheck_adapter.py beside report.json. repro.py sends the requests (x's, and the transformed inputs') to the
// adapter command with the Python standard library alone, compares the answers as the property does (each output's
// plan, recorded with its comparison: cases/signature.h's OutputComparison) and exits 1 while the finding is there,
// 0 once it is gone; `python3 repro.py "COMMAND"` asks another command (a fixed twin). The Python package writes the
// repro of a layer served in process (python/permcheck/_repro.py); both share one comparison, repro_compare.py.
#pragma once

#include "report/report.h"

#include <filesystem>
#include <string>

namespace permcheck::report {

struct AdapterRepro {
    std::string command;            // the adapter command, as the audit ran it (/bin/sh -c)
    std::string reference_command;  // the reference's, for agreement; empty otherwise
    std::string directory;          // where the audit ran them (its working directory)
    // The request lines: x's, and the transformed inputs' (empty for a nondeterministic finding, which asks x alone).
    std::string x_request, transformed_request;
};

// Why no repro can be written for the record's finding (a verdict that is not one, an exception, a history or a
// batch it would need); empty when one can.
std::string repro_refused(const Record& r);
// Writes repro.py, requests.jsonl and permcheck_adapter.py into dir. Throws std::runtime_error on I/O failure.
void write_adapter_repro(const std::filesystem::path& dir, const Record& r, const AdapterRepro& a);

namespace repro_texts {  // the Python package's files, as the build read them (repro_texts.cpp.in)
extern const char* const compare;   // python/permcheck/repro_compare.py
extern const char* const exec;      // python/permcheck/repro_exec.py
extern const char* const protocol;  // python/permcheck/_protocol.py
}  // namespace repro_texts

}  // namespace permcheck::report
