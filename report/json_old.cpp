// report.json's one-tensor form, read and written at the report's edge so that nothing past it knows the form: the
// --dim shorthand's signature as "signature" records it ({"one_tensor": {"d", "output", "min_len", "max_len",
// "width"}}), and the readers of reports of earlier versions, whose findings held the one-tensor form's own fields
// (n, d, x, permutation, both sides as matrices), read as the one-tensor signature's finding (audit/blackbox.h).
#include "report/json_fields.h"

#include <algorithm>

namespace permcheck::report {

namespace {

Mat<double> matrix_from(const json& j, const std::string& field) {
    if (!j.is_array()) throw std::invalid_argument("field '" + field + "' must be an array of rows");
    const auto rows = static_cast<Eigen::Index>(j.size());
    const Eigen::Index cols = rows == 0 ? 0 : (j[0].is_array() ? static_cast<Eigen::Index>(j[0].size()) : -1);
    Mat<double> m(rows, std::max<Eigen::Index>(cols, 0));
    for (Eigen::Index i = 0; i < rows; ++i) {
        const json& row = j[static_cast<std::size_t>(i)];
        if (!row.is_array() || static_cast<Eigen::Index>(row.size()) != cols)
            throw std::invalid_argument("field '" + field + "': row " + std::to_string(i) +
                                        " must be an array of " + std::to_string(cols) + " numbers, like row 0");
        for (Eigen::Index c = 0; c < cols; ++c)
            m(i, c) = number_from(row[static_cast<std::size_t>(c)],
                                  field + "[" + std::to_string(i) + "][" + std::to_string(c) + "]");
    }
    return m;
}

// The output of the one-tensor form a report of property p recorded before reports held signatures: pooled (y:d)
// for invariance, the sequence (y:n,d) otherwise.
Output recorded_output(Property p) { return p == Property{"invariance"} ? Output::pooled : Output::sequence; }

}  // namespace

// The --dim shorthand's signature, as report.json's "signature" holds it: {"one_tensor": {"d", "output", "min_len",
// "max_len", "width"}}, its width 0 while no answer gave it.
json one_tensor_json(const Signature& s) {
    const Output output = one_tensor_output(s);
    const Axis& n = s.axes.at(0);
    return json{{"d", s.inputs.at(0).dims.at(1).size}, {"output", output == Output::pooled ? "pooled" : "sequence"},
                {"min_len", n.min_len}, {"max_len", n.max_len}, {"width", s.outputs.at(0).dims.back().size}};
}

Signature one_tensor_from(const json& j) {
    const std::string at = "signature.one_tensor.";
    object_at(j, "signature.one_tensor");
    const std::string output = get_as<std::string>(j, "output", at);
    if (output != "sequence" && output != "pooled")
        throw std::invalid_argument("field '" + at + "output' must be sequence or pooled, got '" + output + "'");
    Signature s = one_tensor_signature(get_as<int>(j, "d", at), output == "pooled" ? Output::pooled : Output::sequence,
                                       get_as<int>(j, "min_len", at), get_as<int>(j, "max_len", at));
    const int width = get_as<int>(j, "width", at);
    if (width < 0) throw std::invalid_argument("field '" + at + "width' must not be negative");
    s.outputs[0].dims.back().size = width;
    try {
        validate(s);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field 'signature.one_tensor': " + std::string(e.what()));
    }
    return s;
}

// ---- reports of earlier versions ----------------------------------------------------------------------------
// The one-tensor form's own fields (n, d, x, permutation, both sides as matrices, where as position and feature),
// which reports of the --dim shorthand and of the checks of the layers of one sequence held before every finding was
// recorded by name: read as the one-tensor signature's finding, input x and output y (j an object, as its caller
// has checked).
Counterexample one_tensor_finding(const json& j, const Record& r) {
    const std::string at = "counterexample.";
    const Mat<double> x = matrix_from(required(j, "x", at), at + "x");
    const Mat<double> lhs = matrix_from(required(j, "layer_of_permuted", at), at + "layer_of_permuted");
    const Mat<double> rhs = matrix_from(required(j, "permuted_layer", at), at + "permuted_layer");
    Permutation perm;
    try {
        perm = Permutation(get_as<std::vector<int>>(j, "permutation", at));
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field 'counterexample.permutation': " + std::string(e.what()));
    }
    if (perm.size() != x.rows())
        throw std::invalid_argument("field 'counterexample.permutation' has " + std::to_string(perm.size()) +
                                    " entries but x has " + std::to_string(x.rows()) + " rows (positions)");
    const bool pooled = recorded_output(r.property) == Output::pooled;
    Counterexample c;
    c.lengths = {{"n", static_cast<int>(x.rows())}};
    c.perms = {{"n", perm}};
    c.inputs = {{"x", tensor_matrix::as_tensor(x)}};
    OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = tensor_matrix::as_tensor(lhs);
    y.permuted_layer = tensor_matrix::as_tensor(rhs);
    if (pooled) y.layer_of_permuted.shape = y.permuted_layer.shape = {static_cast<int>(lhs.size())};
    y.max_abs_diff = number_at(j, "max_abs_diff", at);
    y.tolerance = number_at(j, "tolerance", at);
    y.shape_mismatch = get_or<bool>(j, "shape_mismatch", false, at);
    y.holds = false;
    const json& where = required(j, "where", at);
    const int row = get_as<int>(where, "position", at + "where."), col = get_as<int>(where, "feature", at + "where.");
    if (!y.shape_mismatch) y.where = pooled ? std::vector<int>{col} : std::vector<int>{row, col};
    c.outputs.push_back(std::move(y));
    if (!perm.is_identity()) c.axis_at_fault = std::string(1, 'n');  // not = "n": GCC 12 warns falsely (-Wrestrict) at -O3
    c.case_index = get_or<int>(j, "case_index", -1, at);
    c.shrink_steps = get_or<int>(j, "shrink_steps", 0, at);
    c.weight_seed = get_or<std::uint64_t>(j, "weight_seed", 0, at);
    if (const long shift = get_or<long>(j, "shift", 0, at); shift != 0) c.part.numbers["shift"] = shift;
    c.confirmed_exactly = get_or<bool>(j, "confirmed_exactly", false, at);
    c.replay = r.replay;
    return c;
}

// The one-tensor signature of such a report: the output's width that of the saved answers, the axis's lengths the
// audit's (details.audit.min_len and max_len) when the report has them. An audit's speaks the shorthand's dialect.
Signature one_tensor_signature_of(const Record& r, const Counterexample& c) {
    const json audit = r.details.is_object() && r.details.contains("audit") ? r.details["audit"] : json::object();
    const auto length = [&](const char* key, int fallback) {
        return audit.is_object() && audit.contains(key) && integer_fits<int>(audit[key]) ? audit[key].get<int>() : fallback;
    };
    const Output output = recorded_output(r.property);
    const int n = c.lengths.at("n");
    const Tensor& x = c.inputs.at("x");
    Signature s = one_tensor_signature(x.shape.at(1), output, std::min(length("min_len", 1), n),
                                       std::max(length("max_len", n), n));
    s.outputs[0].dims.back().size = c.outputs.at(0).layer_of_permuted.shape.back();
    return s;
}

// A named finding of a reference layer that the verdict table wrote before findings carried their weight seed: the
// table's check drew case i's weights from seed + i with version 3 of the draw.
bool table_row_without_weights(const json& c, const Record& r) {
    return !c.contains("weight_seed") && r.replay.rfind("permcheck --cases", 0) == 0;
}

}  // namespace permcheck::report
