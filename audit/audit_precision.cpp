// What the answers say of their precision, the precisions a run judges with, and the verdict of a failure's
// kind (audit/audit_engine.h).
#include "audit/audit_engine.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace permcheck::engine {

int significant_bits(double v) {
    if (v == 0.0) return 0;
    int exponent = 0;
    double m = std::ldexp(std::frexp(std::abs(v), &exponent), 53);  // the significand as an integer below 2^53
    const auto bits = static_cast<std::uint64_t>(m);
    return 64 - std::countl_zero(bits) - std::countr_zero(bits);
}

void SideEvidence::add(const double* values, std::size_t count) {
    answered = true;
    constexpr double float32_max = static_cast<double>(std::numeric_limits<float>::max());
    for (std::size_t k = 0; k < count && all_float32; ++k) {  // a value that is not float32 decides: float64
        const double v = values[k];
        if (!std::isfinite(v)) continue;
        any_finite = true;
        if (std::abs(v) > float32_max || static_cast<double>(static_cast<float>(v)) != v) all_float32 = false;
        else if (!rounded && significant_bits(v) > kShortDyadicBits) rounded = true;
    }
}

void SideEvidence::add(const SideEvidence& other) {
    answered = answered || other.answered;
    any_finite = any_finite || other.any_finite;
    all_float32 = all_float32 && other.all_float32;
    rounded = rounded || other.rounded;
}

Arithmetic SideEvidence::dtype() const { return all_float32 && rounded ? Arithmetic::float32 : Arithmetic::float64; }

void PrecisionEvidence::add(const PrecisionEvidence& other) {
    SideEvidence::add(other);
    reference.add(other.reference);
}

// The coarser side's: float32 when either side's answers show float32 rounding.
Arithmetic PrecisionEvidence::dtype() const {
    return SideEvidence::dtype() == Arithmetic::float32 || reference.dtype() == Arithmetic::float32 ? Arithmetic::float32
                                                                                                      : Arithmetic::float64;
}

DtypeEvidence PrecisionEvidence::evidence() const {
    if (reference.answered && (reference.dtype() == Arithmetic::float32 || !answered)) return reference.evidence();
    return SideEvidence::evidence();
}

DtypeEvidence SideEvidence::evidence() const {
    if (!answered) return DtypeEvidence::no_answer;
    if (!all_float32) return DtypeEvidence::not_float32;
    if (rounded) return DtypeEvidence::float32_rounding;
    return any_finite ? DtypeEvidence::short_dyadic : DtypeEvidence::no_finite_value;
}

std::vector<Arithmetic> candidate_precisions(const AuditOptions& o) {
    return o.dtype ? std::vector{*o.dtype} : std::vector{Arithmetic::float32, Arithmetic::float64};
}

}  // namespace permcheck::engine
