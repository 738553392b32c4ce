// The torch scalar type of each precision permcheck audits, shared by the built-in modules (torch_adapter.cpp)
// and TorchScript files (torch_script.cpp). Internal to permcheck_torch: it includes LibTorch's headers.
#pragma once

#include "cases/vocabulary.h"

#include <c10/core/ScalarType.h>

namespace permcheck::adapters {

// float32, float64, bfloat16 and float16 to their torch types; exact (which no torch audit offers) to float64.
inline c10::ScalarType scalar_type_of(Arithmetic a) {
    switch (a) {
        case Arithmetic::float32:
        case Arithmetic::tf32: return c10::kFloat;  // float32 storage; a GPU's matrix products round to TF32
        case Arithmetic::bfloat16: return c10::kBFloat16;
        case Arithmetic::float16: return c10::kHalf;
        case Arithmetic::float64:
        case Arithmetic::exact: break;
    }
    return c10::kDouble;
}

}  // namespace permcheck::adapters
