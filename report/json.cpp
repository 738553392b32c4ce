// The record as JSON, schema permcheck.report/1 (README, "Reports"): written here, and read back with every field
// checked, since a report is untrusted input to `permcheck replay` and the failure database.
#include "report/report.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace permcheck::report {

using nlohmann::json;

namespace {

// ---- numbers ---------------------------------------------------------------------------------------------
// JSON has no NaN or infinity; they are written as the strings "NaN", "Infinity" and "-Infinity" (the names
// JavaScript and Python's json module use). Finite numbers are written by nlohmann's shortest round-trip
// formatting, so every double reads back bit for bit.
json number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

double number_from(const json& j, const std::string& field) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
        if (s == "Infinity") return std::numeric_limits<double>::infinity();
        if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    throw std::invalid_argument("field '" + field + "' must be a number or one of \"NaN\", \"Infinity\", " +
                                "\"-Infinity\", got " + j.dump());
}

json matrix(const Mat<double>& m) {
    json rows = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(number(m(i, j)));
        rows.push_back(std::move(row));
    }
    return rows;
}

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

const json& required(const json& j, const char* field, const std::string& where = "") {
    const auto it = j.find(field);
    if (it == j.end()) throw std::invalid_argument("missing field '" + where + field + "'");
    return *it;
}

// Whether v is an integer that T holds: get<T>() would wrap an out-of-range integer silently, and convert a
// float outside T's range with undefined behaviour (found by fuzz/fuzz_report).
template <class T> bool integer_fits(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (!v.is_number_integer()) return false;
    const std::int64_t x = v.get<std::int64_t>();
    if (x >= 0) return static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    return std::is_signed_v<T> && x >= static_cast<std::int64_t>(std::numeric_limits<T>::min());
}
template <class T> struct is_integer_vector : std::false_type {};
template <class E> struct is_integer_vector<std::vector<E>> : std::is_integral<E> {};

template <class T> T get_as(const json& j, const char* field, const std::string& where = "") {
    const json& v = required(j, field, where);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (v.is_number() && !integer_fits<T>(v))
            throw std::invalid_argument("field '" + where + field + "' must be an integer in [" +
                                        std::to_string(std::numeric_limits<T>::min()) + ", " +
                                        std::to_string(std::numeric_limits<T>::max()) + "], got " + v.dump());
    } else if constexpr (is_integer_vector<T>::value) {
        if (v.is_array())
            for (const json& e : v)
                if (e.is_number() && !integer_fits<typename T::value_type>(e))
                    throw std::invalid_argument("field '" + where + field + "' must hold integers in range, got " +
                                                e.dump());
    }
    try {
        return v.get<T>();
    } catch (const json::exception&) {
        throw std::invalid_argument("field '" + where + field + "' has the wrong type: " + v.dump());
    }
}

template <class T> T get_or(const json& j, const char* field, T fallback, const std::string& where = "") {
    return j.contains(field) && !j[field].is_null() ? get_as<T>(j, field, where) : fallback;
}

// A name field read through its one parser (check/vocabulary.h), with the field named in the error.
template <class Enum, class Parse> Enum named(const json& j, const char* field, Parse parse) {
    const std::string text = get_as<std::string>(j, field);
    try {
        return parse(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field '" + std::string(field) + "': " + e.what());
    }
}

// ---- the counterexample ----------------------------------------------------------------------------------
json counterexample_json(const Counterexample& c) {
    json where = json::object();
    where["position"] = c.comparison.row;
    where["feature"] = c.comparison.col;
    return json{{"n", c.n()},
                {"d", c.d()},
                {"permutation", c.perm.one_line()},
                {"cycles", c.perm.cycles()},
                {"x", matrix(c.x)},
                {"layer_of_permuted", matrix(c.lhs)},
                {"permuted_layer", matrix(c.rhs)},
                {"max_abs_diff", number(c.comparison.max_abs_diff)},
                {"where", where},
                {"tolerance", number(c.comparison.tolerance)},
                {"margin", number(c.comparison.margin())},
                {"shape_mismatch", c.comparison.shape_mismatch},
                {"case_index", c.case_index},
                {"shrink_steps", c.shrink_steps},
                {"weight_seed", c.weight_seed},
                {"shift", c.shift},
                {"confirmed_exactly", c.confirmed_exactly},
                {"black_box", c.black_box}};
}

Counterexample counterexample_from(const json& j, const Record& r) {
    const std::string at = "counterexample.";
    if (!j.is_object()) throw std::invalid_argument("field 'counterexample' must be an object or null");
    Counterexample c;
    c.layer = r.layer;
    c.property = r.property;
    c.dtype = r.dtype;
    c.seed = r.seed;
    c.replay = r.replay;
    c.x = matrix_from(required(j, "x", at), at + "x");
    c.lhs = matrix_from(required(j, "layer_of_permuted", at), at + "layer_of_permuted");
    c.rhs = matrix_from(required(j, "permuted_layer", at), at + "permuted_layer");
    const auto one_line = get_as<std::vector<int>>(j, "permutation", at);
    try {
        c.perm = Permutation(one_line);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field 'counterexample.permutation': " + std::string(e.what()));
    }
    if (c.perm.size() != c.x.rows())
        throw std::invalid_argument("field 'counterexample.permutation' has " + std::to_string(c.perm.size()) +
                                    " entries but x has " + std::to_string(c.x.rows()) + " rows (positions)");
    if (j.contains("n") && get_as<long>(j, "n", at) != c.x.rows())
        throw std::invalid_argument("field 'counterexample.n' disagrees with the rows of x");
    if (j.contains("d") && get_as<long>(j, "d", at) != c.x.cols())
        throw std::invalid_argument("field 'counterexample.d' disagrees with the columns of x");
    c.comparison.holds = false;
    c.comparison.max_abs_diff = number_from(required(j, "max_abs_diff", at), at + "max_abs_diff");
    c.comparison.tolerance = number_from(required(j, "tolerance", at), at + "tolerance");
    const json& where = required(j, "where", at);
    c.comparison.row = get_as<Eigen::Index>(where, "position", at + "where.");
    c.comparison.col = get_as<Eigen::Index>(where, "feature", at + "where.");
    c.comparison.shape_mismatch = get_or<bool>(j, "shape_mismatch", false, at);
    c.case_index = get_or<int>(j, "case_index", -1, at);
    c.shrink_steps = get_or<int>(j, "shrink_steps", 0, at);
    c.weight_seed = get_or<std::uint64_t>(j, "weight_seed", 0, at);
    c.shift = get_or<long>(j, "shift", 0, at);
    c.confirmed_exactly = get_or<bool>(j, "confirmed_exactly", false, at);
    c.black_box = get_or<bool>(j, "black_box", false, at);
    return c;
}

// The weight draw's version, 0 when the report has none. One this permcheck cannot draw is refused: the
// counterexample's layer would get other weights than it was found with, and the replay would mean nothing.
int weights_version(const json& j) {
    const int v = get_or<int>(j, "weights", 0);
    if (j.contains("weights") && (v < kOldestWeightsVersion || v > kWeightsVersion))
        throw std::invalid_argument("field 'weights': version " + std::to_string(v) + " of the weight draw is " +
                                    "unknown to this permcheck, which draws versions " +
                                    std::to_string(kOldestWeightsVersion) + " to " + std::to_string(kWeightsVersion) +
                                    "; a newer permcheck made this report, replay it with that one");
    return v;
}

}  // namespace

// ---- JSON ------------------------------------------------------------------------------------------------
json to_json(const Record& r) {
    json j = json::object();
    j["schema"] = kSchema;
    j["verdict"] = verdict_name(r.verdict);
    j["layer"] = r.layer;
    j["property"] = property_name(r.property);
    j["dtype"] = arithmetic_name(r.dtype);
    j["cases"] = r.cases;
    j["seed"] = r.seed;
    j["counterexample"] = r.counterexample ? counterexample_json(*r.counterexample) : json(nullptr);
    j["error"] = r.error;
    j["replay"] = r.replay;
    j["details"] = r.details.is_null() ? json::object() : r.details;
    const bool white_box = r.counterexample && !r.counterexample->black_box;
    const int weights = white_box ? r.counterexample->weights : r.weights;
    if (weights > 0) j["weights"] = weights;
    return j;
}

Record from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("a report must be a JSON object, got " + std::string(j.type_name()));
    const std::string schema = get_as<std::string>(j, "schema");
    if (schema != kSchema)
        throw std::invalid_argument("unsupported schema '" + schema + "'; this permcheck reads '" + kSchema + "'");
    Record r;
    r.verdict = named<Verdict>(j, "verdict", parse_verdict);
    r.layer = get_as<std::string>(j, "layer");
    r.property = named<Property>(j, "property", parse_property);
    r.dtype = named<Arithmetic>(j, "dtype", parse_arithmetic);
    r.cases = get_as<int>(j, "cases");
    if (r.cases < 0) throw std::invalid_argument("field 'cases' must not be negative, got " + std::to_string(r.cases));
    r.seed = get_as<std::uint64_t>(j, "seed");
    r.error = get_or<std::string>(j, "error", "");
    r.replay = get_or<std::string>(j, "replay", "");
    if (j.contains("details") && !j["details"].is_null()) {
        if (!j["details"].is_object()) throw std::invalid_argument("field 'details' must be an object");
        r.details = j["details"];
    }
    r.weights = weights_version(j);
    if (j.contains("counterexample") && !j["counterexample"].is_null()) {
        r.counterexample = counterexample_from(j["counterexample"], r);
        // A report written before the draw had versions has no field: its weights are version 1.
        if (!r.counterexample->black_box) r.counterexample->weights = r.weights > 0 ? r.weights : kOldestWeightsVersion;
    }
    return r;
}

}  // namespace permcheck::report
