#include "check/check_result.h"

#include <sstream>

namespace permcheck {

std::string replay_command(const std::string& layer, Property property, const CheckOptions& opts) {
    std::ostringstream s;
    s << "permcheck check " << layer << " --property " << property_name(property) << " --dtype "
      << arithmetic_name(opts.arithmetic) << " --seed " << opts.seed << " --cases " << opts.cases << " --min-len "
      << opts.min_len << " --max-len " << opts.max_len << " --dim " << opts.d;
    return s.str();
}

}  // namespace permcheck
