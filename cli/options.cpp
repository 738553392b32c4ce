#include "cli/options.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace permcheck::cli {
namespace {

template <class T> bool parse_whole(const std::string& text, T& value) {
    const char* end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data(), end, value);
    return ec == std::errc{} && stop == end;
}

std::string number_text(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

}  // namespace

std::string range_problem(const IntRange& r, long long value) {
    if (value >= r.lo && value <= r.hi) return "";
    return std::string(r.flag) + " must be between " + std::to_string(r.lo) + " and " + std::to_string(r.hi) + r.why +
           ", got " + std::to_string(value);
}

std::string range_problem(const RealRange& r, double value) {
    const bool above_lo = r.lo_open ? value > r.lo : value >= r.lo;
    const bool below_hi = r.hi_open ? value < r.hi : value <= r.hi;
    if (above_lo && below_hi) return "";
    return std::string(r.flag) + " must be " + r.noun + " in " + r.interval + r.why + ", got " + number_text(value);
}

CLI::Validator in_range(const IntRange& r) {
    return CLI::Validator(
        [r](std::string& text) {
            long long v = 0;
            if (!parse_whole(text, v))
                throw BadOption(std::string(r.flag) + " must be an integer between " + std::to_string(r.lo) + " and " +
                                std::to_string(r.hi) + r.why + ", got '" + text + "'");
            if (const std::string problem = range_problem(r, v); !problem.empty()) throw BadOption(problem);
            return std::string();
        },
        "");
}

CLI::Validator in_range(const RealRange& r) {
    return CLI::Validator(
        [r](std::string& text) {
            double v = 0;
            if (!parse_whole(text, v) || !std::isfinite(v))
                throw BadOption(std::string(r.flag) + " must be " + r.noun + " in " + r.interval + r.why + ", got '" +
                                text + "'");
            if (const std::string problem = range_problem(r, v); !problem.empty()) throw BadOption(problem);
            return std::string();
        },
        "");
}

CLI::Validator not_below_min_len(const int& min_len) {
    return CLI::Validator(
        [&min_len](std::string& text) {
            if (std::stoll(text) < min_len)
                throw BadOption("--min-len (" + std::to_string(min_len) + ") must not exceed --max-len (" + text + ")");
            return std::string();
        },
        "");
}

CLI::Validator parsed_by(std::function<void(const std::string&)> parse) {
    return CLI::Validator(
        [parse = std::move(parse)](std::string& text) {
            try {
                parse(text);
            } catch (const std::invalid_argument& e) {
                throw BadOption(e.what());
            }
            return std::string();
        },
        "");
}

CLI::Option* add_seed(CLI::App& app, std::uint64_t& target, const std::string& help) {
    CLI::Option* opt = app.add_option("--seed", target, help);
    opt->check(CLI::Validator(
        [](std::string& text) {
            std::uint64_t v = 0;
            if (!parse_whole(text, v))
                throw BadOption("--seed must be an integer in [0, 18446744073709551615], got " + text);
            return std::string();
        },
        ""));
    return opt->capture_default_str();
}

}  // namespace permcheck::cli
