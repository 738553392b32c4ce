// The reference layer families, each with its builder and what the theory says of it: the rows of the verdict
// matrix.
#pragma once

#include "layers/family.h"
#include "layers/signature_family.h"

#include <string>
#include <vector>

namespace permcheck {

// Every reference layer, in the order the verdict table shows them.
const std::vector<LayerFamily>& catalog();
// The entry of that name; throws std::invalid_argument listing the valid names otherwise.
const LayerFamily& find_layer(const std::string& name);
std::string layer_names(const char* separator = ", ");

// Every reference layer over several named inputs (issue 12: cross-attention, masks, pairwise biases, message
// passing), in the order the verdict table shows them, after the one-tensor rows.
const std::vector<SignatureFamily>& signature_catalog();
// The entry of that name; throws std::invalid_argument listing the valid names otherwise.
const SignatureFamily& find_signature_layer(const std::string& name);
std::string signature_layer_names(const char* separator = ", ");

}  // namespace permcheck
