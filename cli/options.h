// The command line's checks, stated once: every number's range and every name's choices are CLI11 validators
// that answer in one style ("--cases must be between 1 and 1000000, got 0"), exit 2, before any handler runs.
// CLI11's stock validators cannot say this: CLI::Range prints its bounds as doubles with every digit, and every
// ValidationError is prefixed "--flag: ", so these validators throw BadOption, whose text is the whole message.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace permcheck::cli {

// A parse error whose message already names the flag and what was expected.
class BadOption : public CLI::ParseError {
public:
    explicit BadOption(const std::string& message)
        : CLI::ParseError("BadOption", message, CLI::ExitCodes::ValidationError) {}
};

// An integer flag's range, inclusive; `why` follows the range in the message.
struct IntRange {
    const char* flag;
    long long lo, hi;
    const char* why = "";
    const char* alias = "";  // an older name the option still answers to, e.g. "--d" for "--dim"
};

// A real flag's range, as its message states it (e.g. "(0, 86400]"); an open end is excluded.
struct RealRange {
    const char* flag;
    double lo;
    bool lo_open;
    double hi;
    bool hi_open;
    const char* interval;
    const char* noun = "a number";  // "a number of seconds"
    const char* why = "";
};

// Sizes large enough for any question about order, small enough that a typo cannot make a run hang.
inline constexpr IntRange kCheckCases{"--cases", 1, 1000000};
inline constexpr IntRange kCheckMinLen{"--min-len", 1, 256};
inline constexpr IntRange kCheckMaxLen{"--max-len", 1, 256};
inline constexpr IntRange kCheckD{"--dim", 1, 256, "", "--d"};
inline constexpr IntRange kAuditCases{"--cases", 1, 1000000};
inline constexpr IntRange kAuditMinLen{"--min-len", 1, 1024};
inline constexpr IntRange kAuditMaxLen{"--max-len", 1, 1024};
inline constexpr IntRange kAuditDim{"--dim", 1, 4096};
inline constexpr IntRange kAuditJobs{"--jobs", 1, 64};
inline constexpr IntRange kTorchHeads{"--heads", 1, 4096};
inline constexpr IntRange kProveN{"--n", 2, 64, " (a permutation needs two positions)"};
inline constexpr IntRange kProveD{"--dim", 1, 64, "", "--d"};
inline constexpr IntRange kProveTrials{"--trials", 1, 64};
// The Z3 limit is passed on in milliseconds as an unsigned int, so a day is far below its end.
inline constexpr RealRange kTimeout{"--timeout", 0, true, 86400, false, "(0, 86400]", "a number of seconds"};
inline constexpr RealRange kStartupTimeout{"--startup-timeout", 0, true, 86400, false, "(0, 86400]",
                                           "a number of seconds"};
inline constexpr RealRange kSmtTimeout{"--smt-timeout", 0, true, 86400, false, "(0, 86400]", "a number of seconds"};
inline constexpr RealRange kAmplification{"--amplification", 1, false, 1e15, false, "[1, 1e15]", "a number",
                                          " (how much the layer can grow a rounding error)"};
inline constexpr RealRange kDropout{"--dropout", 0, false, 1, true, "[0, 1)", "a probability"};

// The message for a value outside `r`; empty when it is inside. Also for requests that do not come from
// the command line (prove_smt), so that they are answered in the same words.
std::string range_problem(const IntRange& r, long long value);
std::string range_problem(const RealRange& r, double value);

// The option r.flag, bound to `target`, accepting only integers in r; the default shown in --help.
CLI::Validator in_range(const IntRange& r);
CLI::Validator in_range(const RealRange& r);
template <class T> CLI::Option* add_ranged(CLI::App& app, const IntRange& r, T& target, const std::string& help) {
    static_assert(std::is_integral_v<T>);
    const std::string names = *r.alias ? std::string(r.flag) + "," + r.alias : std::string(r.flag);
    return app.add_option(names, target, help)->check(in_range(r))->capture_default_str();
}
inline CLI::Option* add_ranged(CLI::App& app, const RealRange& r, double& target, const std::string& help) {
    return app.add_option(r.flag, target, help)->check(in_range(r))->capture_default_str();
}

// --max-len's check against --min-len's value: CLI11 stores the options in the order they were added, so
// --min-len (added first) is stored when --max-len is checked.
CLI::Validator not_below_min_len(const int& min_len);

// A text flag read by a parse function of the library (e.g. parse_axis) that throws std::invalid_argument with a
// message naming the flag: that message becomes the BadOption, so the value is refused as CLI11 parses it.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse);

// Any 64-bit seed: CLI11 alone would read an integer beyond 2^64 - 1 as 2^64 - 1 without a word (issue 7).
CLI::Option* add_seed(CLI::App& app, std::uint64_t& target, const std::string& help);

// One of a few names, converted to its enum value as it is parsed.
template <class E> struct Choice {
    const char* name;
    E value;
    const char* note = "";  // shown after the name in the message, e.g. " (torch::nn::MultiheadAttention)"
};

// Throws BadOption ("--output must be sequence or pooled WHY, got 'tree'") unless `text` is one of the
// names; then `text` becomes the value's number, which CLI11 stores into the enum.
template <class E>
void choose(const std::string& flag, const std::vector<Choice<E>>& choices, const std::string& why, std::string& text) {
    std::string list;
    for (std::size_t k = 0; k < choices.size(); ++k) {
        if (text == choices[k].name) {
            text = std::to_string(static_cast<long long>(choices[k].value));
            return;
        }
        list += (k == 0 ? "" : k + 1 == choices.size() ? " or " : ", ") + std::string(choices[k].name) +
                choices[k].note;
    }
    throw BadOption(flag + " must be " + list + why + ", got '" + text + "'");
}

template <class E>
CLI::Option* add_choice(CLI::App& app, const std::string& flag, E& target, const std::vector<Choice<E>>& choices,
                        const std::string& help, const std::string& why = "", const std::string& shown_as = "") {
    std::string shown;
    for (const Choice<E>& c : choices)
        if (c.value == target) shown = c.name;
    const std::string message_name = shown_as.empty() ? flag : shown_as;
    CLI::Option* opt = app.add_option(flag, target, help)->type_name("TEXT");
    opt->transform(CLI::Validator(
        [=](std::string& text) {
            choose(message_name, choices, why, text);
            return std::string();
        },
        ""));
    return flag.rfind("--", 0) == 0 ? opt->default_str(shown) : opt;
}

}  // namespace permcheck::cli
