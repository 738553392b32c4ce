// The words every record speaks: in which arithmetic, with which verdict, of which kind of tensor. Inside the
// program they are enums; their names are produced and parsed here and nowhere else (the command line and the JSON
// reports call these functions), and so is the text that says which side of a property is which. A property is
// named by its written name (layers/expectation.h); which properties exist is properties/registry.cpp's.
#pragma once

#include "layers/expectation.h"

#include <string>
#include <vector>

namespace permcheck {

// float16, bfloat16 and tf32 are the precisions of black boxes only (audits of adapters and TorchScript modules): the
// reference layers compute in float32, float64 or exact (check/check.h refuses the others). tf32 is float32 whose
// matrix products round their inputs to 10 bits of mantissa (a GPU's TensorFloat-32 mode), accumulating in float32.
enum class Arithmetic { float32, float64, exact, float16, bfloat16, tf32 };

// interrupted: the run was stopped (Ctrl-C, SIGTERM) before it could decide; what it found so far is kept.
// undecided: no case failed, but the tolerance some case needed (its position ids' rounding) was as large as its
// outputs, so "holds" would say nothing.
// history_dependent: the same input answered differently after other requests, and alike when asked twice in a row
// (a cache never reset, a stale rotary table): state kept between calls, not randomness.
enum class Verdict { holds, violated, nondeterministic, non_finite, error, interrupted, undecided, batch_dependent,
                     history_dependent };


const char* arithmetic_name(Arithmetic a);
Arithmetic parse_arithmetic(const std::string& name);  // float32|float64|exact|float16|bfloat16; throws otherwise
bool is_half(Arithmetic a);  // float16 or bfloat16

const char* verdict_name(Verdict v);  // holds | violated | nondeterministic | non-finite | error | interrupted | undecided |
                                      // batch-dependent | history-dependent
Verdict parse_verdict(const std::string& name);  // throws std::invalid_argument listing valid names
int exit_code(Verdict v);  // 0 holds; 1 violated, nondeterministic, non-finite, batch-dependent, history-dependent; 2 error;
                           // 3 undecided;
                           // 130 interrupted

// Where the padding property puts its pads: anywhere (each pad at a random slot), before the real positions or
// after them.
enum class PadPlacement { any, left, right };
const char* pad_placement_name(PadPlacement p);  // any | left | right

// The kind of a signature's input (cases/signature.h). real: real values; mask: booleans, true = padding
// (PyTorch's key_padding_mask); index: integers naming positions of an axis; token: integer ids of a vocabulary,
// moved with their axes as data; position: integer position ids along one axis, moved with the tokens as data;
// mask_keep: a mask of the other polarity, integers 1 = a real position, 0 = padding (the attention_mask of
// common model code).
// segment: integers, the index of the packed sequence each position belongs to (0, 1, ...), along one axis.
enum class TensorKind { real, mask, index, token, position, mask_keep, segment };
// float | mask | index | token | position | mask=keep | segment: the words of --input's KIND (without an =V, =P or =AXIS
// part) and of the "kinds" object of a named request.
const char* tensor_kind_name(TensorKind k);
// mask or mask_keep: an input that pads positions.
inline bool is_mask(TensorKind k) { return k == TensorKind::mask || k == TensorKind::mask_keep; }
// Every kind but real and mask travels as integers (a mask as booleans).
inline bool is_integer(TensorKind k) {
    return k == TensorKind::index || k == TensorKind::token || k == TensorKind::position || k == TensorKind::mask_keep ||
           k == TensorKind::segment;
}

// The two sides of a property as a reader sees them, and their difference: "L(P x)", "P L(x)",
// "|L(P x) - P L(x)|" for equivariance.
struct SideNames {
    const char* lhs;
    const char* rhs;
    const char* diff;
};

}  // namespace permcheck
