// The reference layer families, each with its builder and what the theory says of it: the rows of the verdict
// matrix.
#pragma once

#include "layers/family.h"

#include <string>
#include <vector>

namespace permcheck {

// Every reference layer, in the order the verdict table shows them: the layers of one sequence, then those over
// several named inputs (cross-attention, masks, pairwise biases, message passing, token and position ids).
const std::vector<Family>& catalog();
// The entry of that name; throws std::invalid_argument listing the valid names otherwise.
const Family& find_layer(const std::string& name);
std::string layer_names(const char* separator = ", ");

}  // namespace permcheck
