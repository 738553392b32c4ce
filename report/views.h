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

}  // namespace permcheck::report::detail
