// A TorchScript file (torch.jit.script(module).save(path) in Python) audited in process through LibTorch's
// torch::jit::load, with no Python at audit time: a named black box (cases/signature.h) over the signature the
// user gives. The inputs go to `forward` positionally in the order of the signature's inputs (real inputs in
// the module's dtype, masks as bool, indices as int64), or by name (`arguments`); `forward` returns one tensor or
// a tuple (or list) of tensors in the order of the signature's outputs, or that inside one element of what it
// returns (`output`). Like torch_adapter.h this header names no torch type: only
// torch_script.cpp includes a torch header.
#pragma once

#include "check/signature_audit.h"
#include "cases/signature.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::adapters {

struct TorchScriptOptions {
    std::string path;
    Signature signature;
    // The precision the module computes in (float32, float64, bfloat16 or float16). Empty: the dtype of its
    // floating parameters (float32 when it has none). Given: the module's floating parameters and buffers are
    // converted to it, and so are its real inputs; its outputs are read back as doubles.
    std::optional<Arithmetic> dtype;
    bool train = false;        // keep train mode (dropout active); default eval
    // forward's parameters by name (--argument NAME=SOURCE): SOURCE an input of the signature, or length:AXIS (an
    // int64 tensor [length] of the axis's length); the inputs no SOURCE names go under their own names. Empty:
    // every input positionally, in the signature's order.
    std::vector<std::pair<std::string, std::string>> arguments;
    // The element of forward's result that answers (--output-index): an index of a tuple or list (negative from
    // the end), or a key of a dict. Empty: the whole result.
    std::string output;
    std::uint64_t seed = 0;    // torch::manual_seed before the audit (dropout's draws in train mode)
};

struct TorchScriptModule {
    NamedBlackBox box;
    Arithmetic dtype = Arithmetic::float32;  // the precision it computes in: float32 | float64 | bfloat16 | float16
    std::string schema;                      // forward's, e.g. "forward(__torch__.M self, Tensor x) -> Tensor"
};

// Loads the module and checks `forward` against the signature. Throws std::invalid_argument naming the problem:
// the file does not exist or is not TorchScript; forward takes another number of arguments than there are
// inputs (its schema listed); an argument names no parameter of forward, a source that is neither an input nor
// length:AXIS, or leaves a parameter without a default unset; the parameters are in a precision permcheck does
// not audit. The box throws
// AdapterError when forward fails, returns something other than a tensor or a tuple of as many tensors as there
// are outputs, or an output that is not floating or less precise than the module's dtype (naming the output).
// LibTorch 1.13 has no float16 matrix kernels on CPU: a float16 module with a matrix product fails in forward.
// One LibTorch thread per call, so results do not depend on the machine's core count.
TorchScriptModule load_torch_script(const TorchScriptOptions& o);

}  // namespace permcheck::adapters
