// The failure database: every counterexample a check finds is kept in a directory, and the next run of the same
// check (layer, property, dtype) replays it before searching, as Hypothesis and proptest do. A fixed layer
// removes its entry; a corrupt entry is reported and skipped.
#pragma once

#include "check/engine.h"

#include <filesystem>
#include <ostream>

namespace permcheck::cli {

struct FailureDb {
    std::filesystem::path dir = ".permcheck";
    bool enabled = true;
};

struct CheckRun {
    CheckResult result;
    bool from_db = false;           // the counterexample is the database's, replayed as case 0
    std::filesystem::path entry;    // the database file of this check (empty when the database is off)
};

// The case a counterexample was made of. Its permutation is the acting one; acting_permutation is idempotent
// (a permutation fixing the last position stays as it is; the reversal stays the reversal), so evaluating the
// case again applies the same permutation.
MatrixCase case_of(const Counterexample& c);

// Evaluates a case and records it as a counterexample, as the engine does for the case it found.
Counterexample counterexample_at(const LayerFamily& spec, Property property, const MatrixCase& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps);

// The database file for a check: DIR/<layer>.<property>.<dtype>.json (a permcheck.report/1 record).
std::filesystem::path db_entry(const FailureDb& db, const std::string& layer, Property property, Arithmetic dtype);

// Replays the database's counterexample for this check, if it has one that fits the sizes of opts; otherwise
// searches, and saves what the search finds. Notes (replayed, removed, corrupt entry skipped, cannot save) go
// to `notes`.
CheckRun check_with_db(const LayerFamily& spec, Property property, const CheckOptions& opts, const FailureDb& db,
                       std::ostream& notes);

}  // namespace permcheck::cli
