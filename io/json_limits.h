// Limits on JSON read from outside (adapter answers, reports). nlohmann's parser is iterative, but dump() and
// every reader of a parsed value recurse: a line of a million '[' must be refused before it is parsed.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace permcheck::json_limits {

// Deeper than any answer ({"y": [[...]]} is 3) or report (counterexample matrices: 4) that we write.
inline constexpr std::size_t kMaxDepth = 64;

// The deepest nesting of arrays and objects in `text`, brackets inside strings not counted.
inline std::size_t nesting_depth(std::string_view text) {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

// Throws std::invalid_argument naming `what` when `text` nests deeper than kMaxDepth.
inline void require_shallow(std::string_view text, const std::string& what) {
    const std::size_t depth = nesting_depth(text);
    if (depth > kMaxDepth)
        throw std::invalid_argument(what + " nests arrays and objects " + std::to_string(depth) +
                                    " levels deep; at most " + std::to_string(kMaxDepth) + " are accepted");
}

}  // namespace permcheck::json_limits
