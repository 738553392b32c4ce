// The failure database: every counterexample a check finds is kept in a directory, and the next run of the same
// check (layer, row, dtype) replays it before searching, as Hypothesis and proptest do. A fixed layer removes its
// entry; a corrupt entry is reported and skipped.
#pragma once

#include "check/check.h"

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

// The database file for a check: DIR/<layer>.<property>.<dtype>.json (a permcheck.report/1 record), the property
// as <property>-<axis> for a family with another row of that property.
std::filesystem::path db_entry(const FailureDb& db, const Family& family, const Expectation& row, Arithmetic dtype);

// Replays the database's counterexample for this check, if it has one that fits this run's signature; otherwise
// searches, and saves what the search finds. Notes (replayed, removed, corrupt entry skipped, cannot save) go to
// `notes`.
CheckRun check_with_db(const Family& family, const Expectation& row, const CheckOptions& opts, const FailureDb& db,
                       std::ostream& notes);

}  // namespace permcheck::cli
