#include "cases/vocabulary.h"

#include <array>
#include <stdexcept>

namespace permcheck {

namespace {
constexpr std::array kProperties{Property::equivariance, Property::invariance, Property::shift, Property::reversal,
                                 Property::causal_prefix, Property::padding};
constexpr std::array kArithmetics{Arithmetic::float32, Arithmetic::float64, Arithmetic::exact, Arithmetic::float16,
                                  Arithmetic::bfloat16};
constexpr std::array kVerdicts{Verdict::holds, Verdict::violated, Verdict::nondeterministic, Verdict::non_finite,
                               Verdict::error, Verdict::interrupted, Verdict::undecided, Verdict::batch_dependent};

template <class Enum, std::size_t N, class Name>
std::string joined(const std::array<Enum, N>& all, Name name) {
    std::string out;
    for (Enum e : all) out += (out.empty() ? "" : ", ") + std::string(name(e));
    return out;
}

// A property's names, in the order of its enumerators (a table, so that no switch on a property's name is needed).
struct PropertyWords {
    Property property;
    const char* name;
    const char* adjective;
};
constexpr std::array<PropertyWords, kProperties.size()> kPropertyWords{{
    {Property::equivariance, "equivariance", "equivariant"},
    {Property::invariance, "invariance", "invariant"},
    {Property::shift, "shift", "shift-invariant"},
    {Property::reversal, "reversal", "reversal-equivariant"},
    {Property::causal_prefix, "causal-prefix", "causal"},
    {Property::padding, "padding", "padding-invariant"},
}};

const PropertyWords* words_of(Property p) {
    for (const PropertyWords& w : kPropertyWords)
        if (w.property == p) return &w;
    return nullptr;
}

}  // namespace

const char* property_name(Property p) {
    const PropertyWords* w = words_of(p);
    return w ? w->name : "?";
}

std::string property_names() { return joined(kProperties, property_name); }

const char* property_adjective(Property p) {
    const PropertyWords* w = words_of(p);
    return w ? w->adjective : "?";
}

Property parse_property(const std::string& name) {
    for (Property p : kProperties)
        if (name == property_name(p)) return p;
    throw std::invalid_argument("unknown property '" + name + "'; valid properties: " + property_names());
}

const char* arithmetic_name(Arithmetic a) {
    switch (a) {
        case Arithmetic::float32: return "float32";
        case Arithmetic::float64: return "float64";
        case Arithmetic::exact: return "exact";
        case Arithmetic::float16: return "float16";
        case Arithmetic::bfloat16: return "bfloat16";
    }
    return "?";
}

bool is_half(Arithmetic a) { return a == Arithmetic::float16 || a == Arithmetic::bfloat16; }

Arithmetic parse_arithmetic(const std::string& name) {
    for (Arithmetic a : kArithmetics)
        if (name == arithmetic_name(a)) return a;
    throw std::invalid_argument("unknown arithmetic '" + name + "'; valid: " + joined(kArithmetics, arithmetic_name));
}

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::holds: return "holds";
        case Verdict::violated: return "violated";
        case Verdict::nondeterministic: return "nondeterministic";
        case Verdict::non_finite: return "non-finite";
        case Verdict::error: return "error";
        case Verdict::interrupted: return "interrupted";
        case Verdict::undecided: return "undecided";
        case Verdict::batch_dependent: return "batch-dependent";
    }
    return "?";
}

Verdict parse_verdict(const std::string& name) {
    for (Verdict v : kVerdicts)
        if (name == verdict_name(v)) return v;
    throw std::invalid_argument("unknown verdict '" + name + "'; valid verdicts: " + joined(kVerdicts, verdict_name));
}

int exit_code(Verdict v) {
    switch (v) {
        case Verdict::holds: return 0;
        case Verdict::error: return 2;
        case Verdict::undecided: return 3;
        case Verdict::interrupted: return 130;  // what a shell reports for a command stopped by SIGINT (128 + 2)
        default: return 1;
    }
}

const char* pad_placement_name(PadPlacement p) {
    switch (p) {
        case PadPlacement::any: return "any";
        case PadPlacement::left: return "left";
        case PadPlacement::right: return "right";
    }
    return "?";
}

const char* tensor_kind_name(TensorKind k) {
    switch (k) {
        case TensorKind::real: return "float";
        case TensorKind::mask: return "mask";
        case TensorKind::index: return "index";
        case TensorKind::token: return "token";
        case TensorKind::position: return "position";
        case TensorKind::mask_keep: return "mask=keep";
    }
    return "?";
}

}  // namespace permcheck
