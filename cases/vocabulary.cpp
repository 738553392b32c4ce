#include "cases/vocabulary.h"

#include <stdexcept>

namespace permcheck {

namespace {

// Each word's value and name, in the order of the enumerators (tables, so that no switch on a name is needed).
template <class Enum> struct Word {
    Enum value;
    const char* name;
};
constexpr Word<Arithmetic> kArithmetics[]{{Arithmetic::float32, "float32"}, {Arithmetic::float64, "float64"},
                                          {Arithmetic::exact, "exact"}, {Arithmetic::float16, "float16"},
                                          {Arithmetic::bfloat16, "bfloat16"}, {Arithmetic::tf32, "tf32"}};
constexpr Word<Verdict> kVerdicts[]{{Verdict::holds, "holds"}, {Verdict::violated, "violated"},
                                    {Verdict::nondeterministic, "nondeterministic"}, {Verdict::non_finite, "non-finite"},
                                    {Verdict::error, "error"}, {Verdict::interrupted, "interrupted"},
                                    {Verdict::undecided, "undecided"}, {Verdict::batch_dependent, "batch-dependent"},
                                    {Verdict::history_dependent, "history-dependent"}};
constexpr Word<PadPlacement> kPadPlacements[]{
    {PadPlacement::any, "any"}, {PadPlacement::left, "left"}, {PadPlacement::right, "right"}};
constexpr Word<TensorKind> kTensorKinds[]{{TensorKind::real, "float"}, {TensorKind::mask, "mask"},
                                          {TensorKind::index, "index"}, {TensorKind::token, "token"},
                                          {TensorKind::position, "position"}, {TensorKind::mask_keep, "mask=keep"},
                                          {TensorKind::segment, "segment"}};

template <class Table, class Enum> const auto* word_of(const Table& table, Enum e) {
    for (const auto& w : table)
        if (w.value == e) return &w;
    return static_cast<decltype(&table[0])>(nullptr);
}
template <class Table, class Enum> const char* name_of(const Table& table, Enum e) {
    const auto* w = word_of(table, e);
    return w ? w->name : "?";
}

// The value named `name`, or std::invalid_argument: "unknown WHAT 'NAME'; VALID" and the names, comma-separated.
template <class Table>
auto parse_word(const Table& table, const std::string& name, const char* what, const char* valid) {
    std::string names;
    for (const auto& w : table) {
        if (name == w.name) return w.value;
        names += (names.empty() ? "" : ", ") + std::string(w.name);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + name + "'; " + valid + names);
}

}  // namespace


const char* arithmetic_name(Arithmetic a) { return name_of(kArithmetics, a); }

bool is_half(Arithmetic a) { return a == Arithmetic::float16 || a == Arithmetic::bfloat16; }

Arithmetic parse_arithmetic(const std::string& name) { return parse_word(kArithmetics, name, "arithmetic", "valid: "); }

const char* verdict_name(Verdict v) { return name_of(kVerdicts, v); }

Verdict parse_verdict(const std::string& name) { return parse_word(kVerdicts, name, "verdict", "valid verdicts: "); }

int exit_code(Verdict v) {
    switch (v) {
        case Verdict::holds: return 0;
        case Verdict::error: return 2;
        case Verdict::undecided: return 3;
        case Verdict::interrupted: return 130;  // what a shell reports for a command stopped by SIGINT (128 + 2)
        default: return 1;
    }
}

const char* pad_placement_name(PadPlacement p) { return name_of(kPadPlacements, p); }

const char* tensor_kind_name(TensorKind k) { return name_of(kTensorKinds, k); }

}  // namespace permcheck
