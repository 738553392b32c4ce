#include "check/vocabulary.h"

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

}  // namespace

const char* property_name(Property p) {
    switch (p) {
        case Property::equivariance: return "equivariance";
        case Property::invariance: return "invariance";
        case Property::shift: return "shift";
        case Property::reversal: return "reversal";
        case Property::causal_prefix: return "causal-prefix";
        case Property::padding: return "padding";
    }
    return "?";
}

std::string property_names() { return joined(kProperties, property_name); }

const char* property_adjective(Property p) {
    switch (p) {
        case Property::equivariance: return "equivariant";
        case Property::invariance: return "invariant";
        case Property::shift: return "shift-invariant";
        case Property::reversal: return "reversal-equivariant";
        case Property::causal_prefix: return "causal";
        case Property::padding: return "padding-invariant";
    }
    return "?";
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

SideNames side_names(Property p) {
    switch (p) {
        case Property::shift: return {"L_shifted(x)", "L(x)", "|L_shifted(x) - L(x)|"};
        case Property::invariance: return {"L(P x)", "L(x)", "|L(P x) - L(x)|"};
        case Property::causal_prefix: return {"L(P x)[n-1]", "L(x)[n-1]", "|L(P x)[n-1] - L(x)[n-1]|"};
        case Property::padding: return {"L(pad x)", "L(x)", "|L(pad x) - L(x)|"};
        case Property::equivariance:
        case Property::reversal: break;
    }
    return {"L(P x)", "P L(x)", "|L(P x) - P L(x)|"};
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
