// The evaluator of audits (audit/evaluator.h): what it audits, what it is built from, and the words its parts share.
#include "audit/evaluator.h"

#include "cases/signature_case.h"

#include <algorithm>

namespace permcheck::engine {

namespace {
// "any, left or right".
std::string one_of(const std::vector<std::string>& words) {
    std::string out;
    for (std::size_t k = 0; k < words.size(); ++k) out += (k == 0 ? "" : k + 1 == words.size() ? " or " : ", ") + words[k];
    return out;
}
}  // namespace

const PropertyRules& audited_rules(const AuditOptions& o) { return rules_of(o.property.value_or(Property{"equivariance"})); }

PropertyArgs audited_args(const Signature& s, const AuditOptions& o) {
    const PropertyRules& rules = audited_rules(o);
    const std::vector<PropertyOption> declared = rules.options();
    for (const auto& setting : o.settings) {
        const std::string& keyword = setting.first;  // a name, not a binding: a lambda captures it
        const auto it = std::find_if(declared.begin(), declared.end(), [&](const PropertyOption& d) { return keyword == d.keyword; });
        if (it == declared.end())
            throw std::invalid_argument("the setting '" + keyword + "' is no option of --property " +
                                        std::string(rules.name()));
        if (!it->choices.empty() && std::find(it->choices.begin(), it->choices.end(), setting.second) == it->choices.end())
            throw std::invalid_argument(std::string(it->flag) + " takes " + one_of(it->choices) + ", got '" +
                                        setting.second + "'");
    }
    return rules.completed_args(s, PropertyArgs{.axis = "", .pads = PadPlacement::any, .positions_stay = false,
                                                .white_box = false, .settings = o.settings});
}

Evaluator::Evaluator(const BatchedNamedBlackBox& box, std::shared_ptr<const Signature> s, const AuditOptions& o,
                     Arithmetic dtype, const BatchedNamedBlackBox* reference)
    : box_(box), reference_(reference), s_(std::move(s)), o_(o), widest_(widest_fixed_size(*s_)),
      rules_(audited_rules(o)), args_(audited_args(*s_, o)),
      has_positions_(std::any_of(s_->inputs.begin(), s_->inputs.end(),
                                 [](const TensorSpec& t) { return t.kind == TensorKind::position; })),
      has_free_axes_(!free_axes(*s_).empty()) {
    set_dtype(dtype);
}

void Evaluator::set_dtype(Arithmetic dtype) { tolerance_ = tolerance_model(dtype, o_.amplification); }

bool Evaluator::decided_nothing_in(Arithmetic dtype) const {
    return undecided_.count(tolerance_model(dtype, o_.amplification).unit_roundoff) > 0;
}

std::size_t Evaluator::block_size() const {
    if (rules_.chunks_calls()) return 1;  // a chunked request goes alone
    return std::max(block_size_of(box_.many), reference_ ? block_size_of(reference_->many) : 1);
}

// The side that answers x, as messages name it: L(x), or R(x) against a reference.
const char* Evaluator::x_side() const { return reference_ ? "R(x)" : "L(x)"; }

// What L(x) is compared with: the property's transformation (the position inputs put back when they stay).
Tensors Evaluator::transformed(const Case& c) const { return rules_.transformed(*s_, args_, c); }

// An answer to the transformed inputs as it is compared (a padded answer at its real positions).
Tensors Evaluator::compared_answer(const Case& c, Tensors answer) const {
    for (const TensorSpec& spec : s_->outputs) answer[spec.name] = rules_.compared(spec, c, answer.at(spec.name));
    return answer;
}

// The transformed inputs' side as messages name it: L(P x), L(x_c) or L(pad x).
const char* Evaluator::side_name() const { return rules_.sides(true).lhs; }

Observation Evaluator::observe(const Case& c, bool repeat) { return judge(c, ask(c, repeat), tolerance_); }

rc::Shrinkable<Case> Evaluator::shrinkable(const Case& c) const { return shrinkable_case(rules_, s_, args_, c); }

}  // namespace permcheck::engine
