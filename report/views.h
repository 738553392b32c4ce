// What the human views (Markdown, HTML) share: numbers and matrices as text, escaping, the headline.
#pragma once

#include "report/report.h"

#include <string>

namespace permcheck::report::detail {

std::string text(double v);                        // shortest text that reads back as the same double
std::string one_line_text(const Permutation& p);   // "[1, 0, 2]"
std::string headline(const Record& r);             // "layer: property verdict (dtype)"
std::string matrix_text(const Mat<double>& m);
std::string html_escape(const std::string& in);
std::string md_code(const std::string& s);         // inline code that survives backticks in the content

// The command that re-evaluates the record's saved case as written: `permcheck replay report.json`, with the
// audited command as --exec for an audit (replay never takes the program from a report); empty when nothing
// can (no counterexample, or a black box without a command, e.g. a LibTorch module).
std::string case_replay(const Record& r);
// What the record's two matrices are: "first answer" / "second answer" for a nondeterministic layer (one
// input answered twice), else the property's sides.
SideNames shown_sides(const Record& r);

}  // namespace permcheck::report::detail
