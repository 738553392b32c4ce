// A reproduction without permcheck of an adapter program's finding: repro.py, requests.jsonl and
// permcheck_adapter.py beside report.json. repro.py sends the requests (x's, and the transformed inputs') to the
// adapter command with the Python standard library alone, compares the answers as the property does (each output's
// plan, recorded with its comparison: cases/signature.h's OutputComparison) and exits 1 while the finding is there,
// 0 once it is gone; `python3 repro.py "COMMAND"` asks another command (a fixed twin). The Python package writes the
// repro of a layer served in process (python/permcheck/_repro.py); both share one comparison, repro_compare.py.
#pragma once

#include "report/report.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::report {

struct AdapterRepro {
    std::string command;            // the adapter command, as the audit ran it (/bin/sh -c)
    std::string reference_command;  // the reference's, for agreement; empty otherwise
    std::string directory;          // where the audit ran them (its working directory)
    // The request lines, each by the name repro.py asks it by, in the order requests.jsonl holds them: "x", and
    // (but for a nondeterministic finding, which asks x alone) "transformed"; "before", the request after which x's
    // answer changed (history-dependent); "batch 0", "batch 1", the batched requests of a batch-dependent finding
    // (Counterexample::batches, in order), as they were sent.
    std::vector<std::pair<std::string, std::string>> requests;
    std::map<std::string, int> batch_dims;  // each input's and output's batch dim (a stacked answer is split on it)
};

// Why no repro can be written for the record's finding (a verdict that is not one, a report that did not record
// what it would send); empty when one can.
std::string repro_refused(const Record& r);
// Writes repro.py, requests.jsonl and permcheck_adapter.py into dir. Throws std::runtime_error on I/O failure.
void write_adapter_repro(const std::filesystem::path& dir, const Record& r, const AdapterRepro& a);

// A TorchScript file's finding (`permcheck audit-torch FILE`): repro.py and module.pt, a copy of the file (and
// reference.pt, the reference's, for agreement), beside report.json. repro.py loads them with torch.jit.load, holds
// the record's finding (RECORD) and makes its case from it as the Python package does (repro_case.py), calls forward
// as the audit did and compares as the property does (repro_torch.py, repro_compare.py); `python3 repro.py
// OTHER.pt` asks another file (a fixed twin). A file above kLargestCopiedModule is loaded from where it was.
struct TorchRepro {
    std::string file, reference_file;  // the audited TorchScript file; the reference's (agreement), else empty
    // How forward is called: --argument NAME=SOURCE (keyword arguments), else every input in the signature's order.
    std::vector<std::string> arguments;
    std::string output;  // --output-index: an index of a tuple or list, or a key; empty: the result itself
    bool train = false;  // --train: train mode (dropout on)
    std::string torch_version;  // the torch that served the audit (repro.py names it; any later 2.x runs it)
};
inline constexpr std::uintmax_t kLargestCopiedModule = 256ull * 1024 * 1024;
void write_torch_repro(const std::filesystem::path& dir, const Record& r, const TorchRepro& t);

namespace repro_texts {  // the Python package's files, as the build read them (repro_texts.cpp.in)
extern const char* const compare;     // python/permcheck/repro_compare.py
extern const char* const exec;        // report/repro_exec.py
extern const char* const protocol;    // python/permcheck/_protocol.py
extern const char* const calls;       // python/permcheck/_calls.py (the call mapping the server and each repro use)
extern const char* const case_of;     // python/permcheck/repro_case.py
extern const char* const torch_call;  // python/permcheck/repro_torch.py
}  // namespace repro_texts

}  // namespace permcheck::report
