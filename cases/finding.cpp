// A finding's kind (cases/finding.h).
#include "cases/finding.h"

namespace permcheck {

namespace {
template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;
}  // namespace

Verdict verdict_of(const FindingKind& kind) {
    return std::visit(Overloaded{[](const found::Violated&) { return Verdict::violated; },
                                 [](const found::Raised&) { return Verdict::violated; },
                                 [](const found::NonFinite&) { return Verdict::non_finite; },
                                 [](const found::Nondeterministic&) { return Verdict::nondeterministic; },
                                 [](const found::HistoryDependent&) { return Verdict::history_dependent; },
                                 [](const found::BatchDependent&) { return Verdict::batch_dependent; },
                                 [](const found::Erred&) { return Verdict::error; }},
                      kind);
}

const char* finding_kind_name(const FindingKind& kind) {
    if (std::holds_alternative<found::Raised>(kind)) return "raised";
    if (std::holds_alternative<found::Erred>(kind)) return "erred";
    return verdict_name(verdict_of(kind));
}

const std::string& Counterexample::raised() const {
    static const std::string none;
    if (const auto* r = as<found::Raised>()) return r->what;
    if (const auto* n = as<found::Nondeterministic>()) return n->raised;
    return none;
}

bool Counterexample::raised_by_reference() const {
    if (const auto* r = as<found::Raised>()) return r->by_reference;
    if (const auto* n = as<found::Nondeterministic>()) return !n->raised.empty() && n->by_reference;
    return false;
}

const PriorRequest* Counterexample::asked_before() const {
    const auto* h = as<found::HistoryDependent>();
    return h && h->asked_before ? &*h->asked_before : nullptr;
}

const std::vector<BatchedRequest>& Counterexample::batches() const {
    static const std::vector<BatchedRequest> none;
    const auto* b = as<found::BatchDependent>();
    return b ? b->batches : none;
}

}  // namespace permcheck
