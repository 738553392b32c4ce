#include "report/views.h"

#include "cases/signature_case.h"
#include "properties/property.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace permcheck::report::detail {

// Six significant digits, for the human views: enough to compare a difference with its tolerance; report.json keeps
// every digit.
std::string difference_cell(double v) { return std::isfinite(v) ? text(v) : "not taken"; }

std::string text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string one_line_text(const Permutation& p) { return where_text(p.one_line()); }

std::string headline(const Record& r) {
    return r.layer + ": " + property_name(r.property) + " " + verdict_name(r.verdict) + " (" +
           arithmetic_name(r.dtype) + ")";
}

std::string replaced(const std::string& text, std::initializer_list<std::pair<char, const char*>> by) {
    std::string out;
    for (char ch : text) {
        const auto it = std::find_if(by.begin(), by.end(), [ch](const auto& b) { return b.first == ch; });
        if (it == by.end()) out += ch;
        else out += it->second;
    }
    return out;
}

std::string html_escape(const std::string& in) {
    return replaced(in, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}});
}

std::string md_code(const std::string& s) {
    const std::string fence = s.find('`') == std::string::npos ? "`" : "`` ";
    return fence + s + (fence == "`" ? "`" : " ``");
}

namespace {
// item(x) of every x of `list`, comma-separated.
template <class List, class Item> std::string joined(const List& list, Item item) {
    std::string s;
    for (const auto& x : list) s += (s.empty() ? "" : ", ") + item(x);
    return s;
}

void append_tensor(std::string& s, const Tensor& t, std::size_t dim, std::size_t& at) {
    if (dim == t.shape.size()) {
        s += at < t.values.size() ? text(t.values[at++]) : std::string("?");
        return;
    }
    s += '[';
    for (int k = 0; k < t.shape[dim]; ++k) {
        if (k) s += ", ";
        append_tensor(s, t, dim + 1, at);
    }
    s += ']';
}
}  // namespace

std::string tensor_text(const Tensor& t) {
    std::string s;
    std::size_t at = 0;
    append_tensor(s, t, 0, at);
    return s;
}

std::string lengths_text(const Lengths& lengths) {
    return joined(lengths, [](const auto& axis_n) { return axis_n.first + " = " + std::to_string(axis_n.second); });
}

const TensorSpec* spec_named(const std::vector<TensorSpec>& specs, const std::string& name) {
    for (const TensorSpec& t : specs)
        if (t.name == name) return &t;
    return nullptr;
}

std::string where_text(const std::vector<int>& where) {
    return "[" + joined(where, [](int k) { return std::to_string(k); }) + "]";
}

std::string cycles_text(const Permutation& p) { return p.is_identity() ? "(identity)" : p.cycles(); }

std::string case_replay(const Record& r) {
    if (r.counterexample && r.weights > 0) return "permcheck replay report.json";  // a reference layer's: no program
    if (!r.counterexample) return "";
    const auto audit = r.details.find("audit");  // an audit through a program (audit-torch's have none to name)
    if (audit == r.details.end() || !audit->is_object()) return "";
    if (audit->value("served_in_process", false)) return "";  // its replay line names permcheck.replay already
    const auto command = audit->find("command");
    if (command == audit->end() || !command->is_string()) return "";
    return "permcheck replay report.json --exec " + shell_quote(command->get<std::string>());
}

SideNames output_sides(const Record& r, const TensorSpec* t) { return sides_of(r.property, r.verdict, t && has_axis(*t)); }

std::vector<std::pair<std::string, const Tensor*>> tensors_shown(const Record& r, const Counterexample& c,
                                                                 const Signature& sig) {
    std::vector<std::pair<std::string, const Tensor*>> shown;
    for (const auto& [name, t] : c.inputs) shown.emplace_back(name, &t);
    const std::string lhs = sides_of(r.property, r.verdict, true).lhs;  // "L(P x)"
    if (!answered_twice(r) && lhs.size() >= 4 && lhs.rfind("L(", 0) == 0 && lhs != "L(x)") {
        const std::string side = lhs.substr(2, lhs.size() - 3);  // "P x"
        for (const auto& [name, t] : c.transformed) {
            const auto x = c.inputs.find(name);
            if (x == c.inputs.end() || x->second.shape != t.shape || x->second.values != t.values)
                shown.emplace_back(side + ": " + name, &t);
        }
    }
    for (const OutputComparison& o : c.outputs) {
        const SideNames names = output_sides(r, spec_named(sig.outputs, o.name));
        shown.emplace_back(o.name + ": " + names.lhs, &o.layer_of_permuted);
        shown.emplace_back(o.name + ": " + names.rhs, &o.permuted_layer);
    }
    return shown;
}

bool answered_twice(const Record& r) {
    return r.verdict == Verdict::nondeterministic || r.verdict == Verdict::batch_dependent ||
           r.verdict == Verdict::history_dependent;
}

std::string counterexample_heading(const Record& r) {
    if (r.counterexample && r.counterexample->is<found::Erred>()) return "The case the layer erred on";
    if (r.verdict == Verdict::nondeterministic) return "One input answered twice";
    if (r.verdict == Verdict::batch_dependent) return "One input answered in a batch and alone";
    if (r.verdict == Verdict::history_dependent) return "One input answered alone and after another request";
    return "Counterexample";
}

std::string raised_text(const Record& r, const Counterexample& c) {
    const SideNames sides = rules_of(r.property).sides(true);
    if (r.verdict != Verdict::violated)  // nondeterministic: asked again, it answered (or the other way round)
        return std::string("The same request as ") + (c.raised_by_reference() ? sides.rhs : sides.lhs) +
               " raised once and was answered once: " + c.raised();
    return raised_clause(r.property, c) + ": " + c.raised();
}

namespace {
// The settings an audit's details record (details.audit, details.audit_torch); none for a white-box check.
std::map<std::string, std::string> settings_of(const Record& r) {
    for (const char* key : {"audit", "audit_torch"})
        if (r.details.contains(key)) return report::recorded_settings(r.details[key]);
    return {};
}
}  // namespace

std::string claim_text(const Record& r, const TensorSpec& t, const Signature& sig) {
    const PropertyRules& rules = rules_of(r.property);
    return rules.permutes() ? output_claim(t, sig, moved_axis(r.property, sig, settings_of(r))) : rules.output_claim();
}

std::string checked_intro(const Record& r) {
    std::string numbers;  // what the table's numbers are
    if (r.checked && (r.verdict == Verdict::violated || r.verdict == Verdict::non_finite))
        numbers = " The failing case counts, as it was found (before shrinking).";
    if (!r.checked) numbers = " This report does not record the differences and tolerances of the run.";
    if (!rules_of(r.property).permutes())
        return "Each case draws a length for every axis and applies the property's transformation (" +
               rules_of(r.property).compared_text() + "); an output's two sides are compared once a case." + numbers;
    if (const std::string along = r.signature ? moved_axis(r.property, *r.signature, settings_of(r)) : ""; !along.empty())
        return "Each case draws a length for every axis and permutes " + along +
               " alone, every other axis in place (one a sorted index input runs along moves only as its re-sort "
               "says); an output's two sides are compared once a case." + numbers;
    return "Each case draws a length for every axis and permutes every axis at once; an output's two sides are "
           "compared once a case, so its numbers are over all its axes together." + numbers;
}

std::string found_text(const Record& r, const Counterexample& c) {
    if (c.is<found::Erred>()) {
        std::string text = erred_text(c) + " (the error above); a replay of this report sends it again.";
        text[0] = 'C';
        return text;
    }
    std::string s = "Found at case " + std::to_string(c.case_index) + ", " + std::to_string(c.shrink_steps) + " shrink steps" +
                    cut_short_text(c) + ".";
    if (r.weights > 0)
        s += " Weight seed " + std::to_string(c.weight_seed) + " (weight draw version " + std::to_string(c.weights) +
             "); " + (c.confirmed_exactly ? "confirmed" : "NOT confirmed") + " in exact rational arithmetic.";
    if (!c.raised().empty()) s += " " + raised_text(r, c);
    return s;
}

std::string answered_twice_note(const Record& r) {
    if (r.verdict == Verdict::nondeterministic)
        return "The layer answered the same input x twice with different results; no permutation plays a part.";
    if (r.verdict == Verdict::batch_dependent) {
        std::string s = "The layer answered the same input x differently in a batched request and alone; no permutation "
                        "plays a part.";
        if (r.counterexample && !r.counterexample->batches().empty()) {
            const BatchedRequest& b = r.counterexample->batches().front();
            s += " Its batched request held " + std::to_string(b.items.size()) + " items" +
                 (b.stacked ? " (sent stacked)" : "") + ", " + (b.transformed_side ? "the transformed inputs'" : "x's") +
                 " the one at place " + std::to_string(b.at) +
                 " (report.json's counterexample.batches holds each batched request whole, as it was sent).";
        }
        return s;
    }
    if (r.verdict == Verdict::history_dependent)
        return "The layer answered the same input x alike twice in a row, and differently after another request: it "
               "keeps state between calls (a cache never reset); no permutation plays a part.";
    return "";
}

namespace {

using nlohmann::json;

// The lengths per axis the record holds: its "checked", or an older report's details.audit (axis_lengths, or the
// one-tensor form's lengths of its one axis).
std::map<std::string, std::vector<int>> covered_lengths(const Record& r) {
    if (r.checked) return r.checked->lengths;
    std::map<std::string, std::vector<int>> out;
    const auto audit = r.details.find("audit");
    if (audit == r.details.end() || !audit->is_object()) return out;
    const auto list = [](const json& j, std::vector<int>& into) {
        if (!j.is_array()) return false;
        for (const json& v : j)
            if (v.is_number_integer()) into.push_back(v.get<int>());
            else return false;
        return true;
    };
    if (const auto a = audit->find("axis_lengths"); a != audit->end() && a->is_object())
        for (auto it = a->begin(); it != a->end(); ++it)
            if (std::vector<int> v; list(*it, v)) out[it.key()] = v;
    if (const auto n = audit->find("lengths"); n != audit->end() && r.signature && !r.signature->axes.empty())
        if (std::vector<int> v; list(*n, v) && !v.empty()) out[r.signature->axes[0].name] = v;
    return out;
}

std::string lengths_cell(const std::map<std::string, std::vector<int>>& lengths, const std::string& axis) {
    const auto it = lengths.find(axis);
    if (it == lengths.end() || it->second.empty()) return "not recorded";
    const std::size_t n = it->second.size();
    return runs_text(it->second, "..") + " (" + std::to_string(n) + (n == 1 ? " length)" : " lengths)");
}

// "2^-53" for a power of two, else the number.
std::string power_of_two(double u) {
    int e = 0;
    if (u > 0 && std::frexp(u, &e) == 0.5) return "2^" + std::to_string(e - 1);
    return text(u);
}

}  // namespace

std::vector<CheckedRow> checked_rows(const Record& r) {
    std::vector<CheckedRow> rows;
    if (!r.signature) return rows;
    const Signature& s = *r.signature;
    const auto lengths = covered_lengths(r);
    const PropertyRules& rules = rules_of(r.property);
    for (const TensorSpec& t : s.outputs) {
        CheckedRow row;
        row.output = t.name;
        // A layer that answered one input twice differently: the table's numbers are its cases' before, whose sides
        // the report's names (first and second answer) are not; it names none.
        row.sides = answered_twice(r) ? SideNames{"", "", ""} : output_sides(r, &t);
        if (r.checked)
            for (const OutputCheck& o : r.checked->outputs)
                if (o.name == t.name) row.check = &o;
        if (r.verdict == Verdict::violated && r.counterexample)
            for (const OutputComparison& o : r.counterexample->outputs)
                if (o.name == t.name && !o.holds) row.broke = true;
        const std::size_t first = rows.size();
        if (!rules.permutes()) {
            row.axis = "every axis";
            row.claim = rules.output_claim();
            for (const Axis& a : s.axes)
                row.lengths += (row.lengths.empty() ? "" : "; ") + a.name + " " + lengths_cell(lengths, a.name);
            rows.push_back(row);
        } else {
            const std::string moved = moved_axis(r.property, s, settings_of(r));
            for (const Axis& a : s.axes) {
                const bool along = std::any_of(t.dims.begin(), t.dims.end(), [&a](const Dim& d) { return d.axis == a.name; });
                row.axis = a.name;
                row.claim = !moved.empty() && a.name != moved ? "left in place" : along ? "equivariant along" : "invariant to";
                row.lengths = lengths_cell(lengths, a.name);
                rows.push_back(row);
                row.first = false;
            }
        }
        for (std::size_t k = first; k < rows.size(); ++k) rows[k].span = static_cast<int>(rows.size() - first);
    }
    return rows;
}

std::string tolerance_text(const Record& r) {
    const ToleranceModel t = r.checked ? r.checked->tolerance : tolerance_model(r.dtype, 1.0);
    std::string s = std::string(arithmetic_name(r.dtype)) + ", unit roundoff u = " + power_of_two(t.unit_roundoff) +
                    " = " + text(t.unit_roundoff) + ". Each case has its own tolerance: tol = " + text(t.safety) +
                    " × a × γ(k) × M, with ";
    if (t.lambda > 0)
        s += "γ(k) = exp(λ √k u + k u² / (1 − u)) − 1, λ = " + text(t.lambda) +
             " (a probabilistic bound for half precision), ";
    else
        s += "γ(k) = k u / (1 − k u), ";
    s += r.checked ? "a = " + text(t.amplification) + " (the amplification), " : std::string("a the amplification, ");
    s += "k = the sum of the case's axis lengths + ";
    s += r.checked ? std::to_string(r.checked->widest) + " (the widest fixed size of the signature)"
                   : std::string("the widest fixed size of the signature");
    const bool positions = r.signature && std::any_of(r.signature->inputs.begin(), r.signature->inputs.end(),
                                                      [](const TensorSpec& x) { return x.kind == TensorKind::position; });
    if (positions) s += " + " + text(kPositionRoundingTerms) + " × the largest position id (their rounding)";
    s += ", M = the largest |value| among the real inputs and both sides.";
    return s;
}

std::string row_result(const CheckedRow& row) {
    if (row.broke) return "violated";
    if (!row.check) return "not recorded";
    if (row.check->cases == 0) return "no case judged";
    return row.check->largest_fraction <= 1.0 ? "within tolerance" : "violated";
}

std::vector<std::pair<std::string, std::string>> detail_lines(const Record& r) {
    std::vector<std::pair<std::string, std::string>> out;
    const auto value = [](const json& v) -> std::string {
        if (v.is_string()) return v.get<std::string>();
        if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
        if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
        if (v.is_number()) return text(v.get<double>());
        if (v.is_array() && v.size() <= 16 && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_primitive(); })) {
            std::string s = "[";
            for (std::size_t k = 0; k < v.size(); ++k)
                s += (k ? ", " : "") + (v[k].is_number_float() ? text(v[k].get<double>()) : v[k].is_string() ? v[k].get<std::string>() : v[k].dump());
            return s + "]";
        }
        return "";  // the signature, the lengths per axis, long lists: report.json's
    };
    const bool groups = r.details.size() > 1;
    for (auto group = r.details.begin(); group != r.details.end(); ++group) {
        if (!group->is_object()) {
            if (const std::string v = value(*group); !v.empty()) out.emplace_back(group.key(), v);
            continue;
        }
        for (auto it = group->begin(); it != group->end(); ++it)
            if (const std::string v = value(*it); !v.empty())
                out.emplace_back(groups ? group.key() + "." + it.key() : it.key(), v);
    }
    return out;
}

std::string axes_text(const std::vector<std::string>& axes) {
    return joined(axes, [](const std::string& a) { return a.empty() ? std::string("-") : a; });
}

}  // namespace permcheck::report::detail
