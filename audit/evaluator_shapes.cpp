// The answers' shapes (audit/evaluator.h): the outputs the signature names, each shape checked against it, the
// sizes it leaves open learned from the first answer.
#include "audit/evaluator.h"

#include "cases/signature_case.h"

namespace permcheck::engine {

// The transformed side's answer, its outputs' shapes checked: one of another shape than the signature says, where x's
// answer had it, is the finding (a readout that counts its graphs from the last batch entry answers another number
// of them once the nodes move): the outputs are kept as answered, those of another shape named in `a`.
Tensors Evaluator::taken_transformed(Tensors answer, const Lengths& lengths, Answers& a) {
    try {
        return named_outputs(answer, lengths);
    } catch (const AnswerShape& e) {
        Tensors outputs;
        for (const TensorSpec& spec : s_->outputs) {
            const auto it = answer.find(spec.name);
            if (it == answer.end()) return named_outputs(std::move(answer), lengths);  // an output missing: the error
            try {
                check_shape(spec, it->second, lengths);
            } catch (const AnswerShape&) {
                a.reshaped_outputs.insert(spec.name);
            }
            outputs[spec.name] = std::move(it->second);
        }
        a.reshaped = e.what();
        return outputs;
    }
}

// The outputs the signature names of an answer, their shapes checked.
Tensors Evaluator::named_outputs(Tensors answer, const Lengths& lengths) {
    Tensors outputs;
    for (const TensorSpec& spec : s_->outputs) {
        const auto it = answer.find(spec.name);
        if (it == answer.end())
            throw AdapterError("the layer's answer to a request of " + last_request + " has no output '" + spec.name +
                               "' (the signature names " + format_output(spec) + ")");
        check_shape(spec, it->second, lengths);
        outputs[spec.name] = std::move(it->second);
    }
    return outputs;
}

// An open size is the one the first answer gave; every later answer must have it.
void Evaluator::check_open_size(const TensorSpec& spec, std::size_t k, int size, const std::string& in_a_request) {
    const std::string dim = " in dim " + std::to_string(k);
    if (size < 1) throw AdapterError("the layer answered output '" + spec.name + "' with size 0" + dim + in_a_request);
    const auto [it, first] = open_.emplace(std::pair{spec.name, k}, size);
    if (first || it->second == size) return;
    throw AdapterError("the layer answered output '" + spec.name + "' with size " + std::to_string(size) + dim +
                       in_a_request + ", after " + std::to_string(it->second) +
                       " before; a size the signature leaves open must not depend on the input");
}

// An output's shape against the signature's at these lengths, said in the layer's terms ("the layer answered output
// 'y' with shape (1, 1, 8) where the signature says (1, 2, 8): dim 1, the axis n, has 1 of its 2 positions").
void Evaluator::check_shape(const TensorSpec& spec, const Tensor& t, const Lengths& lengths) {
    std::vector<int> want = shape_of(spec, lengths);
    for (std::size_t k = 0; k < want.size() && k < t.shape.size(); ++k)
        if (spec.dims[k].is_open()) want[k] = t.shape[k];  // an open size is checked against the first answer's
    const std::string m = "the layer answered output '" + spec.name + "' with shape " + index_text(t.shape);
    const std::string request = " (" + format_output(spec) + "), for a request of " + last_request;
    if (t.shape.size() != want.size())
        throw AnswerShape(m + ", " + std::to_string(t.shape.size()) + " dims where the signature says " +
                          std::to_string(want.size()) + ": " + index_text(want) + request);
    for (std::size_t k = 0; k < want.size(); ++k) {
        if (spec.dims[k].is_open()) check_open_size(spec, k, t.shape[k], " for a request of " + last_request);
        if (t.shape[k] == want[k]) continue;
        const Dim& d = spec.dims[k];
        throw AnswerShape(m + " where the signature says " + index_text(want) + ": dim " + std::to_string(k) + ", " +
                          (d.is_axis() ? "the axis " + d.axis + ", has " + std::to_string(t.shape[k]) + " of its " +
                                             std::to_string(want[k]) + " positions"
                                       : "of fixed size " + std::to_string(want[k]) + ", has " + std::to_string(t.shape[k])) +
                          request);
    }
    if (t.values.size() != t.size())
        throw AdapterError(m + "with " + std::to_string(t.values.size()) + " values for the shape " +
                           index_text(t.shape) + " (" + std::to_string(t.size()) + ")");
}

void Evaluator::learned_sizes(Signature& s) const {
    for (TensorSpec& spec : s.outputs)
        for (std::size_t k = 0; k < spec.dims.size(); ++k)
            if (const auto it = open_.find({spec.name, k}); spec.dims[k].is_open() && it != open_.end())
                spec.dims[k].size = it->second;
}

}  // namespace permcheck::engine
