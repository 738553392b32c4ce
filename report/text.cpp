// The text of a finding (report/text.h).
#include "report/text.h"

#include "properties/property.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace permcheck {

SideNames sides_of(Property p, Verdict v, bool moves) {
    if (v == Verdict::nondeterministic) return {"first answer", "second answer", "|first answer - second answer|"};
    if (v == Verdict::batch_dependent) return {"answer in a batch", "answer alone", "|in a batch - alone|"};
    if (v == Verdict::history_dependent) return {"first answer", "answer after", "|first answer - answer after|"};
    return rules_of(p).sides(moves);
}

FindingWords finding_words(Property p, Verdict v, const Counterexample& c, bool reference_layer) {
    if (v == Verdict::history_dependent)
        return {c.asked_before() ? "one input answered, then answered again after the request of " +
                                       format_lengths(c.asked_before()->lengths) + " below"
                               : std::string("one input answered alike twice in a row, differently after other requests"),
                sides_of(p, v, true), sides_of(p, v, false), false};
    if (v == Verdict::nondeterministic || v == Verdict::batch_dependent)
        return {v == Verdict::nondeterministic ? "one input answered twice" : "one input answered in a batched request and alone",
                sides_of(p, v, true), sides_of(p, v, false), false};
    const PropertyRules& rules = rules_of(p);
    std::string done = rules.case_text(c);
    if (rules.permutes()) done += " (rows: (P x)[i] = x[p[i]])";
    if (!c.axis_at_fault.empty()) done += "; the axis at fault: " + c.axis_at_fault;
    return {done, rules.sides(true), rules.sides(false), reference_layer};
}

namespace {

// The entries beyond the tolerance that the cut rows hide (a row of more than kTerminalRowValues shows its first and
// last three values and the column `keep`): counted, the first few named, so that no difference hides in a "...".
std::string hidden_differences(const OutputComparison& o, std::size_t keep) {
    const std::vector<int>& shape = o.layer_of_permuted.shape;
    if (shape.empty() || o.permuted_layer.shape != shape) return "";
    const std::size_t last = static_cast<std::size_t>(std::max(shape.back(), 0)), ends = 3;
    if (last <= kTerminalRowValues) return "";
    std::vector<std::string> hidden;
    for (std::size_t e = 0; e < o.layer_of_permuted.values.size(); ++e) {
        const std::size_t column = e % last;
        if (column < ends || column >= last - ends || column == keep) continue;
        if (std::abs(o.layer_of_permuted.values[e] - o.permuted_layer.values[e]) > o.tolerance)
            hidden.push_back(index_text(position_of(e, shape)));
    }
    if (hidden.empty()) return "";
    std::string out = "    " + std::to_string(hidden.size()) + " more entr" + (hidden.size() == 1 ? "y" : "ies") +
                      " beyond the tolerance in the columns the rows cut: ";
    for (std::size_t k = 0; k < hidden.size() && k < 4; ++k) out += (k ? ", " : "") + hidden[k];
    return out + (hidden.size() > 4 ? ", ...\n" : "\n");
}

// ", mask (1 = padding)" or ", index into nodes" after an input's shape; nothing for a real input.
std::string kind_text(const TensorSpec& spec) {
    switch (spec.kind) {
        case TensorKind::real: return "";
        case TensorKind::mask: return ", mask (1 = padding)";
        case TensorKind::mask_keep: return ", mask (1 = a real position, 0 = padding)";
        case TensorKind::index: return ", index into " + spec.index_axis;
        case TensorKind::token: return ", token ids in [0, " + std::to_string(spec.limit) + ")";
        case TensorKind::position: return ", position ids along " + position_axis(spec);
        case TensorKind::segment: return ", the packed sequence of each position along " + position_axis(spec);
    }
    return "";
}

// The outputs in the order of the signature's outputs, then any the signature does not name.
std::vector<OutputComparison> in_order(const std::vector<OutputComparison>& outputs, const Signature& sig) {
    std::vector<OutputComparison> out;
    for (const TensorSpec& t : sig.outputs)
        for (const OutputComparison& o : outputs)
            if (o.name == t.name) out.push_back(o);
    for (const OutputComparison& o : outputs)
        if (std::none_of(sig.outputs.begin(), sig.outputs.end(), [&o](const TensorSpec& t) { return t.name == o.name; }))
            out.push_back(o);
    return out;
}

}  // namespace

std::string describe(const Counterexample& c, const Signature& sig, const FindingWords& words) {
    std::ostringstream s;
    s << std::setprecision(6) << "  lengths:";
    for (const auto& [axis, len] : c.lengths) s << " " << axis << " = " << len;
    s << "\n  " << words.done << "\n";
    for (const TensorSpec& spec : sig.inputs) {
        const auto it = c.inputs.find(spec.name);
        if (it == c.inputs.end()) continue;
        s << "  input " << spec.name << " " << index_text(it->second.shape) << kind_text(spec) << " =\n";
        s << format_tensor(it->second, "    ");
    }
    if (const PriorRequest* before = c.asked_before()) {  // the request after which the answer changed
        s << "  the request before the answer after (" << format_lengths(before->lengths) << "):\n";
        for (const TensorSpec& spec : sig.inputs)
            if (const auto it = before->inputs.find(spec.name); it != before->inputs.end())
                s << "    input " << spec.name << " " << index_text(it->second.shape) << " =\n" << format_tensor(it->second, "      ");
    }
    if (!c.raised().empty())  // the finding is what one side raised; no output compared
        s << "  " << (c.raised_by_reference() ? words.moved.rhs : words.moved.lhs) << " RAISED:\n    " << c.raised() << "\n";
    for (const OutputComparison& o : in_order(c.outputs, sig)) {
        // The other side: L(x) itself for an output the property leaves where it is, else P L(x).
        const auto spec = std::find_if(sig.outputs.begin(), sig.outputs.end(), [&o](const TensorSpec& t) { return t.name == o.name; });
        const SideNames& sides = spec != sig.outputs.end() && !has_axis(*spec) ? words.unmoved : words.moved;
        std::string lhs = sides.lhs, rhs = sides.rhs;
        const std::size_t width_of_names = std::max(lhs.size(), rhs.size());  // the shapes after both sides line up
        lhs.resize(width_of_names, ' ');
        rhs.resize(width_of_names, ' ');
        const auto finite = [](const Tensor& t) {
            return std::all_of(t.values.begin(), t.values.end(), [](double v) { return std::isfinite(v); });
        };
        const bool non_finite = !finite(o.layer_of_permuted) || !finite(o.permuted_layer);
        s << "  output " << o.name << (non_finite ? " (NON-FINITE)" : o.holds ? " (agrees)" : " (DIFFERS)") << ":\n    " << lhs << " "
          << index_text(o.layer_of_permuted.shape) << " =\n";
        // The column of the largest difference stays in view when the rows are cut.
        const std::size_t keep = o.where.empty() ? kNoColumn : static_cast<std::size_t>(o.where.back());
        // Both sides' columns line up, one under the other.
        const int width = std::max(column_width(o.layer_of_permuted.values.data(), o.layer_of_permuted.values.size()),
                                   column_width(o.permuted_layer.values.data(), o.permuted_layer.values.size()));
        s << format_tensor(o.layer_of_permuted, "      ", keep, width);
        s << "    " << rhs << " " << index_text(o.permuted_layer.shape) << " =\n";
        s << format_tensor(o.permuted_layer, "      ", keep, width);
        if (o.shape_mismatch || non_finite) {
            s << (o.shape_mismatch ? "    the shapes differ\n" : "    a side holds NaN or infinity: no difference is taken\n");
            continue;
        }
        s << "    largest |difference| = " << o.max_abs_diff << " at " << index_text(o.where) << " (tolerance "
          << o.tolerance << ")\n";
        s << hidden_differences(o, keep);
    }
    s << "  ";
    if (words.reference_layer)
        s << (c.confirmed_exactly ? "confirmed in exact rational arithmetic" : "NOT confirmed in exact arithmetic")
          << "\n  weight seed " << c.weight_seed << ", ";
    if (c.is<found::Erred>())
        s << erred_text(c) << "; a replay of the report sends it again\n";
    else s << "case " << c.case_index << ", " << c.shrink_steps << " shrink steps" << cut_short_text(c) << "\n";
    if (!c.replay.empty()) s << "  replay: " << c.replay << "\n";
    return s.str();
}

std::string describe(const Counterexample& c, const Signature& s, Property p, Verdict v) {
    return describe(c, s, finding_words(p, v, c));
}

std::string describe_finding(const AuditResult& r) {
    if (!r.counterexample) return "";
    const Counterexample& c = *r.counterexample;
    Signature named;
    if (r.signature) named = *r.signature;
    else
        for (const auto& [name, t] : c.inputs) named.inputs.push_back(TensorSpec{name, {}, TensorKind::real, ""});
    const bool of_the_property = r.verdict == Verdict::violated || r.verdict == Verdict::non_finite;
    return (of_the_property ? property_name(r.property) + std::string(" ") : std::string()) + verdict_name(r.verdict) +
           " (" + arithmetic_name(r.dtype) + ")\n" + describe(c, named, finding_words(r.property, r.verdict, c));
}

std::string precision_text(const AuditResult& r) {
    const std::string name = arithmetic_name(r.dtype);
    switch (r.dtype_evidence) {
        case DtypeEvidence::given: return name;
        case DtypeEvidence::no_answer: return "no answer came, so no precision was inferred";
        case DtypeEvidence::no_finite_value: return name + ", as no answer held a finite value";
        case DtypeEvidence::short_dyadic: return name + ", as the answers were short dyadic numbers";
        case DtypeEvidence::float32_rounding:
        case DtypeEvidence::not_float32: return name + ", inferred from the answers";
    }
    return name;
}

std::string precision_note(const AuditResult& r) {
    if (r.dtype_evidence != DtypeEvidence::short_dyadic && r.dtype_evidence != DtypeEvidence::no_finite_value) return "";
    return std::string(r.dtype_evidence == DtypeEvidence::short_dyadic
                           ? "the answers were short dyadic numbers (at most " +
                                 std::to_string(kShortDyadicBits) +
                                 " significant bits), which any precision computes exactly"
                           : "no answer held a finite value") +
           ": judged as float64, the stricter tolerance; give --dtype float32 for a layer that computes in float32";
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string shell_word(const std::string& s) {
    const bool plain = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789_.,:=-/") == std::string::npos;
    return plain ? s : shell_quote(s);
}

std::string signature_flags(const Signature& s) {
    std::string out;
    for (const Axis& a : s.axes) out += " --axis " + shell_word(format(a));
    for (const TensorSpec& t : s.inputs) out += " --input " + shell_word(format_input(t));
    for (const TensorSpec& t : s.outputs) out += " --output " + shell_word(format_output(t));
    return out;
}

namespace {

// A C++ string literal of s.
std::string cpp_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
}


}  // namespace

std::string replay_hint(const AuditResult& r, const AuditOptions& o) {
    if (!r.replay.empty()) return r.replay;  // the line of the entry that converted the layer's form
    const Signature signature = r.signature.value_or(Signature{});
    std::ostringstream s;
    s << "const permcheck::Signature signature{{";
    for (std::size_t k = 0; k < signature.axes.size(); ++k)
        s << (k ? ", " : "") << "permcheck::parse_axis(" << cpp_string(format(signature.axes[k])) << ")";
    s << "}, {";
    for (std::size_t k = 0; k < signature.inputs.size(); ++k)
        s << (k ? ", " : "") << "permcheck::parse_input(" << cpp_string(format_input(signature.inputs[k])) << ")";
    s << "}, {";
    for (std::size_t k = 0; k < signature.outputs.size(); ++k)
        s << (k ? ", " : "") << "permcheck::parse_output(" << cpp_string(format_output(signature.outputs[k])) << ")";
    s << "}};\n        const permcheck::AuditOptions options{.dtype = permcheck::Arithmetic::" << arithmetic_name(r.dtype)
      << ", .cases = " << o.cases << ", .seed = " << o.seed;
    if (o.shard.count != 1) s << ", .shard = {" << o.shard.index << ", " << o.shard.count << "}";
    if (o.amplification != 1.0) s << ", .amplification = " << o.amplification;
    if (o.property) s << ", .property = permcheck::Property{" << cpp_string(property_name(*o.property)) << "}";
    if (o.skip_padded) s << ", .skip_padded = true";
    if (!o.settings.empty()) {
        s << ", .settings = {";
        for (auto it = o.settings.begin(); it != o.settings.end(); ++it)
            s << (it == o.settings.begin() ? "{" : ", {") << cpp_string(it->first) << ", " << cpp_string(it->second) << "}";
        s << "}";
    }
    s << "};\n        const permcheck::AuditResult again = permcheck::audit_signature("
      << (o.property && rules_of(*o.property).needs_reference() ? "layer, reference" : "layer")
      << ", signature, options);  // finds the same case again";
    return s.str();
}

std::string explain(const AuditResult& r, const AuditOptions& o) {
    std::ostringstream s;
    s << o.name << ": " << property_name(r.property) << " " << verdict_name(r.verdict) << " after " << r.cases
      << (r.cases == 1 ? " case" : " cases")
      << " (" << r.evaluations << (r.evaluations == 1 ? " layer call, " : " layer calls, ") << precision_text(r) << ")\n";
    if (const std::string said = detail_text(r); !said.empty()) s << "  " << said << "\n";
    if (!r.error.empty()) s << "  error: " << r.error << (r.last_request.empty() ? "" : "; last request: " + r.last_request) << "\n";
    if (!r.replay.empty()) {  // the line of the entry that converted the layer's form, in the finding
        if (!r.counterexample) return s.str() + "  replay: " + r.replay + "\n";
        AuditResult shown = r;
        if (shown.counterexample->replay.empty()) shown.counterexample->replay = r.replay;
        return s.str() + describe_finding(shown);
    }
    if (r.counterexample)
        s << describe(*r.counterexample, r.signature.value_or(Signature{}),
                      finding_words(r.property, r.verdict, *r.counterexample));
    s << "  replay (C++):\n        " << replay_hint(r, o) << "\n";
    return s.str();
}

std::string index_error_hint(const Signature& s, const std::string& error) {
    if (error.find("IndexError") == std::string::npos && error.find("index out of range") == std::string::npos &&
        error.find("out of bounds") == std::string::npos)
        return "";
    std::string limits, kinds;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::token || t.kind == TensorKind::position) {
            limits += (limits.empty() ? "" : ", ") + t.name + " < " + std::to_string(t.limit);
            const std::string kind = t.kind == TensorKind::token ? "token=V" : "position=P";
            if (kinds.find(kind) == std::string::npos) kinds += (kinds.empty() ? "" : ", ") + kind;
        }
    if (limits.empty()) return "";
    return "; the ids sent stay below their limits (" + limits +
           "): if a table of the layer's has fewer rows, give its size in the input's kind (" + kinds + ")";
}

std::string cut_short_text(const Counterexample& c) {
    if (c.shrink_cut_short <= 0) return "";
    return ", the shrink cut short at its bound of " + short_number(c.shrink_cut_short) +
           " s (--shrink-seconds): a smaller failing case may exist";
}

std::string moved_axis(const Property& p, const Signature& s, const std::map<std::string, std::string>& settings) {
    PropertyArgs a;
    a.settings = settings;
    try {
        return rules_of(p).permutes() ? rules_of(p).completed_args(s, a).axis : "";
    } catch (const std::invalid_argument&) {
        return "";
    }
}

std::string output_claim(const TensorSpec& t, const Signature& s, const std::string& moved) {
    std::string along, to;
    for (const Axis& a : s.axes) {
        if (!moved.empty() && a.name != moved) continue;
        const bool has = std::any_of(t.dims.begin(), t.dims.end(), [&a](const Dim& d) { return d.axis == a.name; });
        std::string& list = has ? along : to;
        if (!list.empty()) list += ", ";
        list += a.name;
    }
    std::string claim = along.empty() ? "" : "equivariant along " + along;
    if (!along.empty() && !to.empty()) claim += ", ";
    if (!to.empty()) claim += "invariant to " + to;
    return claim;
}

std::string runs_text(const std::vector<int>& lengths, const char* to) {
    std::string s;
    for (std::size_t i = 0; i < lengths.size();) {
        std::size_t j = i;
        while (j + 1 < lengths.size() && lengths[j + 1] == lengths[j] + 1) ++j;
        s += (i ? ", " : "") + std::to_string(lengths[i]);
        if (j > i) s += to + std::to_string(lengths[j]);
        i = j + 1;
    }
    return s;
}

namespace {

// "y equivariant along n, invariant to m; g invariant to n, m": what each output of a signature must do.
std::string signature_claims(const Signature& s, const std::string& moved) {
    std::string out;
    for (const TensorSpec& t : s.outputs)
        out += (out.empty() ? "" : "; ") + t.name + " " + output_claim(t, s, moved);
    return out;
}

}  // namespace

std::string signature_head(const Signature& s, const AuditResult& r) {
    std::ostringstream head;
    // An audit that failed before its first call has settled no dtype (a module not loaded, an adapter not started).
    const bool dtype_known = r.verdict != Verdict::error || r.evaluations > 0;
    const PropertyRules& rules = rules_of(r.property);
    std::string outputs;
    for (const TensorSpec& t : s.outputs)
        if (rules.plan().judges_outputs_without_axes || has_axis(t)) outputs += (outputs.empty() ? "" : ", ") + t.name;
    if (rules.permutes()) head << signature_claims(s, moved_axis(r.property, s, r.settings));
    else head << property_name(r.property) << ": " << outputs << " " << rules.output_claim();
    head << " (" << (dtype_known ? precision_text(r) : "");
    for (std::size_t k = 0; k < s.axes.size(); ++k)
        head << (k || dtype_known ? ", " : "") << s.axes[k].name << " in [" << s.axes[k].min_len << ", "
             << s.axes[k].max_len << "]";
    const char* between = "; ";  // the options the property ran with: along=nodes, padding=left, window=4
    for (const auto& [keyword, value] : r.settings) {
        head << between << keyword << (value == "true" ? "" : "=" + value);
        between = ", ";
    }
    head << ")";
    return head.str();
}

std::string rate_text(double per_second) {
    std::ostringstream s;
    if (per_second >= 100) {
        s << static_cast<long long>(per_second + 0.5);
    } else {
        s.precision(3);
        s << per_second;
    }
    return s.str();
}

std::string audit_summary(const std::string& head, const AuditResult& r, double seconds, const std::string& replay,
                          const Signature* signature) {
    const bool ran_through = r.verdict == Verdict::holds || r.verdict == Verdict::undecided;
    std::ostringstream out;
    out << head << " " << verdict_name(r.verdict) << " after " << r.cases << (r.cases == 1 ? " case" : " cases")
        << ", " << r.evaluations << (r.evaluations == 1 ? " layer call, " : " layer calls, ") << rate_text(seconds) << " s";
    if (ran_through && seconds > 0 && r.cases > 0) out << " (" << rate_text(r.cases / seconds) << " cases/s)";
    out << "\n";
    if (const std::string note = precision_note(r); !note.empty()) out << "  dtype: " << note << "\n";
    if (!r.axis_lengths.empty()) {
        out << "  lengths sent:";
        const char* separator = " ";
        for (const auto& [axis, lengths] : r.axis_lengths) {
            out << separator << axis << " " << runs_text(lengths, "-");
            separator = "; ";
        }
        out << "\n";
    }
    if (const std::string said = detail_text(r); !said.empty()) out << "  " << said << "\n";
    if (r.counterexample) {
        Counterexample shown = *r.counterexample;
        shown.replay = replay;
        out << describe(shown, signature ? *signature : *r.signature,
                        finding_words(r.property, r.verdict, shown));
    }
    if (r.taps) out << describe(*r.taps, kTerminalTapRows);  // the reports list every tap
    return out.str();
}

}  // namespace permcheck
