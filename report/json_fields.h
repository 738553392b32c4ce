// report.json's fields as report/json.cpp and report/json_old.cpp read and write them: numbers (NaN and the
// infinities as strings), required fields, integers read only where their type holds them, names read through their
// one parser; and the one-tensor form's fields, which report/json_old.cpp holds. Internal to report/ (not installed).
#pragma once

#include "report/report.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace permcheck::report {

using nlohmann::json;

// ---- numbers ---------------------------------------------------------------------------------------------
// JSON has no NaN or infinity; they are written as the strings "NaN", "Infinity" and "-Infinity" (the names
// JavaScript and Python's json module use). Finite numbers are written by nlohmann's shortest round-trip
// formatting, so every double reads back bit for bit.
inline json number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

inline double number_from(const json& j, const std::string& field) {
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

inline const json& required(const json& j, const char* field, const std::string& where = "") {
    const auto it = j.find(field);
    if (it == j.end()) throw std::invalid_argument("missing field '" + where + field + "'");
    return *it;
}

// The number `field` of j, required (`where` the place of j, "checked.").
inline double number_at(const json& j, const char* field, const std::string& where) {
    return number_from(required(j, field, where), where + field);
}

// j, which the report holds at `field` ("counterexample.lengths"), refused unless it is an object.
inline const json& object_at(const json& j, const std::string& field) {
    if (!j.is_object()) throw std::invalid_argument("field '" + field + "' must be an object");
    return j;
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

// A name field read through its one parser (cases/vocabulary.h), with the field named in the error.
template <class Enum, class Parse> Enum named(const json& j, const char* field, Parse parse) {
    const std::string text = get_as<std::string>(j, field);
    try {
        return parse(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field '" + std::string(field) + "': " + e.what());
    }
}

// ---- the one-tensor form and reports of earlier versions (report/json_old.cpp) -------------------------------
json one_tensor_json(const Signature& s);
Signature one_tensor_from(const json& j);
Counterexample one_tensor_finding(const json& j, const Record& r);
Signature one_tensor_signature_of(const Record& r, const Counterexample& c);
bool table_row_without_weights(const json& c, const Record& r);

}  // namespace permcheck::report
