// The engine's services that are not templates (check/audit_engine.h).
#include "check/audit_engine.h"

#include <cmath>
#include <limits>

namespace permcheck::engine {

void PrecisionEvidence::add(const double* values, std::size_t count) {
    for (std::size_t k = 0; k < count && (all_float32 || all_integer); ++k) {  // both false: nothing to learn
        const double v = values[k];
        if (!std::isfinite(v)) continue;
        const bool in_range = std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max());
        all_float32 = all_float32 && in_range && static_cast<double>(static_cast<float>(v)) == v;
        all_integer = all_integer && std::trunc(v) == v;
    }
}

void PrecisionEvidence::add(const PrecisionEvidence& other) {
    all_float32 = all_float32 && other.all_float32;
    all_integer = all_integer && other.all_integer;
}

Arithmetic PrecisionEvidence::dtype() const {
    return all_float32 && !all_integer ? Arithmetic::float32 : Arithmetic::float64;
}

std::vector<Arithmetic> candidate_precisions(const AuditOptions& o) {
    if (o.dtype) return {*o.dtype};
    return {Arithmetic::float32, Arithmetic::float64};
}

const char* finding_name(Outcome k) {
    switch (k) {
        case Outcome::violated: return "violation";
        case Outcome::non_finite: return "non-finite output";
        case Outcome::batch_dependent: return "batch-dependent answer";
        default: return "nondeterministic answer";
    }
}

Verdict verdict_of(Outcome k) {
    switch (k) {
        case Outcome::violated: return Verdict::violated;
        case Outcome::non_finite: return Verdict::non_finite;
        case Outcome::batch_dependent: return Verdict::batch_dependent;
        default: return Verdict::nondeterministic;
    }
}

}  // namespace permcheck::engine
