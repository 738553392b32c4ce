// The flags' grammar of a signature (docs/signatures.md): the texts of --axis, --input and --output read into axes
// and tensor specs, and written back (cases/signature.h), each refusal naming the flag, the text and what was
// expected. The rules a whole signature keeps are cases/signature.cpp's.
#include "cases/signature.h"

#include <algorithm>
#include <stdexcept>

namespace permcheck {

namespace {

bool is_name(const std::string& s) {
    if (s.empty() || s.size() > 64) return false;
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (!letter(s[0])) return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || digit(c) || c == '-'; });
}

// A non-negative decimal integer of at most 9 digits, or -1.
int number(const std::string& s) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::stoi(s);
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    for (;;) {
        const auto at = text.find(sep, start);
        parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) return parts;
        start = at + 1;
    }
}

std::invalid_argument bad_flag(const char* flag, const std::string& text, const std::string& expected) {
    return std::invalid_argument(std::string(flag) + " expects " + expected + ", got '" + text + "'");
}

std::vector<Dim> parse_dims(const char* flag, const std::string& text, const std::string& dims_text,
                            const std::string& expected) {
    std::vector<Dim> dims;
    if (dims_text.empty()) return dims;  // a scalar
    for (const std::string& part : split(dims_text, ',')) {
        if (is_name(part)) {
            dims.push_back(Dim{part, 0});
            continue;
        }
        const int size = number(part);
        if (size < 1 || size > kMaxFixedSize)
            throw bad_flag(flag, text, expected + "; each dim is an axis name or a fixed size in [1, " +
                                           std::to_string(kMaxFixedSize) + "], not '" + part + "'");
        dims.push_back(Dim{"", size});
    }
    return dims;
}

std::string format_dims(const std::vector<Dim>& dims) {
    std::string out;
    for (const Dim& d : dims) {
        if (!out.empty()) out += ',';
        out += d.is_axis() ? d.axis : std::to_string(d.size);
    }
    return out;
}

// The V of token=V or the P of position=P: an integer in [1, 2^31).
int kind_limit(const std::string& text, const std::string& value, const std::string& expected) {
    const bool digits = !value.empty() && value.size() <= 10 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long long v = digits ? std::stoll(value) : 0;
    if (v < 1 || v > kMaxKindLimit)
        throw bad_flag("--input", text, expected + "; the V of token=V and the P of position=P are integers in [1, 2^31), not '" +
                                            value + "'");
    return static_cast<int>(v);
}

void parse_kind(TensorSpec& t, const std::string& text, const std::string& kind, const std::string& expected) {
    const auto eq = kind.find('=');
    const std::string word = kind.substr(0, eq), value = eq == std::string::npos ? "" : kind.substr(eq + 1);
    const auto is = [&](TensorKind k) { return word == tensor_kind_name(k); };
    if (eq == std::string::npos && is(TensorKind::real)) return;
    if (eq == std::string::npos && is(TensorKind::mask)) {
        t.kind = TensorKind::mask;
        return;
    }
    if (kind == tensor_kind_name(TensorKind::mask_keep)) {
        t.kind = TensorKind::mask_keep;
        return;
    }
    if (is(TensorKind::index)) {
        // index=AXIS, then qualifiers: ,sorted or ,sorted=ROW, and ,within=INPUT
        std::vector<std::string> parts;
        for (std::size_t from = 0;; ) {
            const auto comma = value.find(',', from);
            parts.push_back(value.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
            if (comma == std::string::npos) break;
            from = comma + 1;
        }
        if (is_name(parts[0])) {
            t.kind = TensorKind::index;
            t.index_axis = parts[0];
            for (std::size_t k = 1; k < parts.size(); ++k) {
                const std::string& q = parts[k];
                const bool digits = q.size() > 7 && q.size() <= 14 &&
                                    std::all_of(q.begin() + 7, q.end(), [](char c) { return c >= '0' && c <= '9'; });
                if (q == "sorted" || (q.rfind("sorted=", 0) == 0 && digits)) {
                    t.sorted_row = q == "sorted" ? 0 : std::stoi(q.substr(7));
                } else if (q.rfind("within=", 0) == 0 && is_name(q.substr(7))) {
                    t.within = q.substr(7);
                } else {
                    throw bad_flag("--input", text, expected + "; after index=AXIS only ',sorted', ',sorted=ROW' (ROW a "
                                                               "row number: the input kept in ascending order of that "
                                                               "row) or ',within=INPUT' (INPUT a batch vector: the "
                                                               "entries of a position stay in one of its groups), not '" +
                                                               q + "'");
                }
            }
            return;
        }
    }
    if (is(TensorKind::token) && eq != std::string::npos) {
        t.kind = TensorKind::token;
        t.limit = kind_limit(text, value, expected);
        return;
    }
    if (kind == tensor_kind_name(TensorKind::segment)) {
        t.kind = TensorKind::segment;
        return;
    }
    if (is(TensorKind::position)) {
        t.kind = TensorKind::position;
        t.limit = eq == std::string::npos ? kDefaultPositions : kind_limit(text, value, expected);
        return;
    }
    throw bad_flag("--input", text, expected + "; KIND is float, mask, mask=keep, index=AXIS, token=V, position[=P] or segment, not '" +
                                        kind + "'");
}

}  // namespace

// ------------------------------------------------------------------------------------------------- grammar

Axis parse_axis(const std::string& text) {
    const std::string expected = "NAME=MIN..MAX (e.g. n=1..8, edges=0..16)";
    const auto eq = text.find('=');
    const auto dots = text.find("..");
    if (eq == std::string::npos || dots == std::string::npos || dots < eq) throw bad_flag("--axis", text, expected);
    Axis a{text.substr(0, eq), number(text.substr(eq + 1, dots - eq - 1)), number(text.substr(dots + 2))};
    if (!is_name(a.name)) throw bad_flag("--axis", text, expected + "; NAME starts with a letter");
    if (a.min_len < 0 || a.max_len < 0) throw bad_flag("--axis", text, expected + "; MIN and MAX are integers >= 0");
    if (a.max_len < a.min_len || a.max_len > kMaxAxisLen || a.max_len < 1)
        throw bad_flag("--axis", text, expected + " with MIN <= MAX and 1 <= MAX <= " + std::to_string(kMaxAxisLen));
    return a;
}

TensorSpec parse_input(const std::string& text) {
    const std::string expected =
        "NAME:DIMS[:KIND] (e.g. q:n,8  pad:n:mask  edge_index:2,edges:index=nodes  ids:n:token=50000  pos:n:position)";
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() < 2 || parts.size() > 3 || !is_name(parts[0])) throw bad_flag("--input", text, expected);
    TensorSpec t{parts[0], parse_dims("--input", text, parts[1], expected), TensorKind::real, ""};
    if (parts.size() == 3) parse_kind(t, text, parts[2], expected);
    return t;
}

TensorSpec parse_output(const std::string& text) {
    const std::string expected = "NAME:DIMS with every fixed size written out (e.g. y:n,8  g:4)";
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() != 2 || !is_name(parts[0])) throw bad_flag("--output", text, expected);
    return {parts[0], parse_dims("--output", text, parts[1], expected), TensorKind::real, ""};
}

std::string format(const Axis& a) { return a.name + "=" + std::to_string(a.min_len) + ".." + std::to_string(a.max_len); }

std::string format_input(const TensorSpec& t) {
    std::string out = format_output(t);
    // Appends, not "=" + ...: GCC 12 warns falsely (-Wrestrict) on a literal plus a string at -O3.
    if (t.kind != TensorKind::real) {
        out += ':';
        out += tensor_kind_name(t.kind);
    }
    if (t.kind == TensorKind::index) {
        out += '=';
        out += t.index_axis;
        if (t.sorted_row == 0) out += ",sorted";
        if (t.sorted_row > 0) out += ",sorted=" + std::to_string(t.sorted_row);
        if (!t.within.empty()) out += ",within=" + t.within;
    }
    if (t.kind == TensorKind::token || (t.kind == TensorKind::position && t.limit != kDefaultPositions)) {
        out += '=';
        out += std::to_string(t.limit);
    }
    return out;
}

std::string format_output(const TensorSpec& t) { return t.name + ":" + format_dims(t.dims); }

}  // namespace permcheck
