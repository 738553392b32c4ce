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

// A signature audit's pieces: a tensor as nested arrays ("[[1, 2], [3, 4]]", a scalar as a number); the lengths
// ("n = 2, m = 2"); what an output must do ("equivariant along n, invariant to m"); a spec by name (nullptr if
// none); a permutation's cycles, "(identity)" for one that moves nothing.
std::string tensor_text(const Tensor& t);
std::string lengths_text(const Lengths& lengths);
std::string output_claim(const TensorSpec& t, const Signature& s);
const TensorSpec* spec_named(const std::vector<TensorSpec>& specs, const std::string& name);
std::string cycles_text(const Permutation& p);
std::string where_text(const std::vector<int>& where);  // "[1, 2]": one index per dim
std::string axes_text(const std::vector<std::string>& axes);  // a tap's axes, "n, -": "-" for a dim without one

// The command that re-evaluates the record's saved case as written: `permcheck replay report.json`, with the
// audited command as --exec for an audit (replay never takes the program from a report); empty when nothing
// can (no counterexample, or a black box without a command, e.g. a LibTorch module).
std::string case_replay(const Record& r);
// What the record's two matrices are: "first answer" / "second answer" for a nondeterministic layer (one
// input answered twice), else the property's sides.
SideNames shown_sides(const Record& r);

}  // namespace permcheck::report::detail
