#include "adapters/torch_adapter.h"

#include "adapters/torch_dtype.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

namespace permcheck::adapters {

TorchLayer parse_torch_layer(const std::string& name) {
    if (name == "mha") return TorchLayer::mha;
    if (name == "encoder-layer") return TorchLayer::encoder_layer;
    if (name == "decoder-layer") return TorchLayer::decoder_layer;
    throw std::invalid_argument("the torch layer must be mha (torch::nn::MultiheadAttention), encoder-layer "
                                "(torch::nn::TransformerEncoderLayer) or decoder-layer "
                                "(torch::nn::TransformerDecoderLayer), got '" + name + "'");
}

const char* torch_layer_name(TorchLayer l) {
    switch (l) {
        case TorchLayer::mha: return "mha";
        case TorchLayer::encoder_layer: return "encoder-layer";
        case TorchLayer::decoder_layer: return "decoder-layer";
    }
    return "?";
}

namespace {

const char* torch_class_name(TorchLayer l) {
    switch (l) {
        case TorchLayer::mha: return "torch::nn::MultiheadAttention";
        case TorchLayer::encoder_layer: return "torch::nn::TransformerEncoderLayer";
        case TorchLayer::decoder_layer: return "torch::nn::TransformerDecoderLayer";
    }
    return "?";
}

}  // namespace

const char* torch_mask_name(TorchMask m) {
    switch (m) {
        case TorchMask::none: return "none";
        case TorchMask::causal: return "causal";
        case TorchMask::key_padding: return "key-padding";
        case TorchMask::key_padding_fixed: return "key-padding-fixed";
    }
    return "?";
}

Verdict expected_verdict(const TorchOptions& o) {
    if (o.train && o.dropout > 0) return Verdict::nondeterministic;
    if (o.mask == TorchMask::causal || o.mask == TorchMask::key_padding_fixed) return Verdict::violated;
    return Verdict::holds;
}

double torch_amplification(TorchLayer l) {
    switch (l) {
        case TorchLayer::mha: return 1.0;
        case TorchLayer::encoder_layer: return 256.0 * 256.0;
        case TorchLayer::decoder_layer: return 256.0 * 256.0 * 256.0;
    }
    return 1.0;
}

std::string torch_name(const TorchOptions& o) {
    return std::string(torch_class_name(o.layer)) +
           "(dim=" + std::to_string(o.dim) + ", heads=" + std::to_string(o.heads) + ", mask=" + torch_mask_name(o.mask) +
           ", " + (o.train ? "train, dropout=" + std::to_string(o.dropout) : std::string("eval")) + ", " +
           arithmetic_name(o.dtype) + ")";
}

namespace {

void validate(const TorchOptions& o) {
    if (o.dim < 1 || o.dim > 4096) throw std::invalid_argument("--dim must be between 1 and 4096, got " + std::to_string(o.dim));
    if (o.heads < 1 || o.dim % o.heads != 0)
        throw std::invalid_argument("--heads must be at least 1 and divide --dim (" + std::to_string(o.dim) + "), got " +
                                    std::to_string(o.heads));
    if (!(o.dropout >= 0.0 && o.dropout < 1.0))
        throw std::invalid_argument("--dropout must be in [0, 1), got " + std::to_string(o.dropout));
    if (o.dtype == Arithmetic::exact)
        throw std::invalid_argument("LibTorch computes in float32, float64 or bfloat16, not exact");
    if (o.dtype == Arithmetic::float16)
        throw std::invalid_argument("LibTorch 1.13 has no float16 matrix kernels on CPU: audit the built-ins with "
                                    "--dtype bfloat16, or a float16 layer through an adapter (permcheck audit --exec)");
    if (o.layer == TorchLayer::decoder_layer && o.mask != TorchMask::none && o.mask != TorchMask::causal)
        throw std::invalid_argument(std::string("the decoder layer takes --mask none or causal (on its targets), got ") +
                                    torch_mask_name(o.mask));
}

// An (n, dim) input as (n, 1, dim): sequence first, batch of one. Throws AdapterError for another shape (the
// decoder's inputs; the other layers' x is checked before).
torch::Tensor to_sequence_first(const Tensor& t, int dim, const char* name, torch::Dtype dtype) {
    if (t.shape.size() != 2 || t.shape[1] != dim)
        throw AdapterError(std::string("the decoder layer has dim ") + std::to_string(dim) + " but its input " + name +
                           " is not (length, " + std::to_string(dim) + ")");
    const std::int64_t n = t.shape[0], d = t.shape[1];
    torch::Tensor x = torch::empty({n, 1, d}, torch::TensorOptions().dtype(torch::kFloat64));
    if (n * d > 0) std::copy(t.values.begin(), t.values.end(), x.data_ptr<double>());
    return x.to(dtype);
}

// torch::nn::TransformerDecoderLayer on one target sequence and one memory, batch of one, sequence first.
class DecoderBox {
public:
    explicit DecoderBox(const TorchOptions& o) : o_(o) {
        validate(o);
        torch::manual_seed(o.seed);
        dtype_ = scalar_type_of(o.dtype);
        // dim_feedforward 4 * dim, as the encoder layer's.
        decoder_ = torch::nn::TransformerDecoderLayer(
            torch::nn::TransformerDecoderLayerOptions(o.dim, o.heads).dim_feedforward(4 * o.dim).dropout(o.dropout));
        decoder_->to(dtype_);
        decoder_->train(o.train);
    }

    Tensors operator()(const Tensors& inputs) {
        torch::NoGradGuard no_grad;
        torch::set_num_threads(1);
        const torch::Tensor tgt = to_sequence_first(inputs.at("tgt"), o_.dim, "tgt", dtype_);
        const torch::Tensor memory = to_sequence_first(inputs.at("memory"), o_.dim, "memory", dtype_);
        const std::int64_t n = tgt.size(0);
        torch::Tensor tgt_mask;
        if (o_.mask == TorchMask::causal)  // target i may not attend to target j > i
            tgt_mask = torch::triu(torch::full({n, n}, -std::numeric_limits<double>::infinity(),
                                               torch::TensorOptions().dtype(dtype_)), 1);
        const torch::Tensor out = decoder_->forward(tgt, memory, tgt_mask).to(torch::kFloat64).contiguous();
        Tensor y;
        y.shape = {static_cast<int>(out.size(0)), static_cast<int>(out.size(2))};
        y.values.assign(out.data_ptr<double>(), out.data_ptr<double>() + out.numel());
        return {{"y", y}};
    }

private:
    TorchOptions o_;
    torch::Dtype dtype_ = torch::kFloat64;
    torch::nn::TransformerDecoderLayer decoder_{nullptr};
};

// A module and its masks, called on one sequence: input (n, 1, dim), batch of one, sequence first.
class TorchLayerBox {
public:
    explicit TorchLayerBox(const TorchOptions& o) : o_(o) {
        validate(o);
        torch::manual_seed(o.seed);
        dtype_ = scalar_type_of(o.dtype);
        if (o.layer == TorchLayer::decoder_layer)
            throw std::invalid_argument("the decoder layer has two inputs (targets and a memory): audit it as a named "
                                        "black box (torch_decoder_black_box)");
        if (o.layer == TorchLayer::mha)
            mha_ = torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(o.dim, o.heads).dropout(o.dropout));
        else  // dim_feedforward 4 * dim rather than PyTorch's 2048: the property does not depend on it, the time does.
            encoder_ = torch::nn::TransformerEncoderLayer(
                torch::nn::TransformerEncoderLayerOptions(o.dim, o.heads).dim_feedforward(4 * o.dim).dropout(o.dropout));
        torch::nn::Module& module = o.layer == TorchLayer::mha ? static_cast<torch::nn::Module&>(*mha_) : *encoder_;
        module.to(dtype_);
        module.train(o.train);
    }

    Mat<double> operator()(const Mat<double>& x) {
        if (x.cols() != o_.dim)
            throw AdapterError("the torch layer has dim " + std::to_string(o_.dim) + " but the request has " +
                               std::to_string(x.cols()) + " features per position");
        torch::NoGradGuard no_grad;
        torch::set_num_threads(1);
        const auto n = x.rows();
        const torch::Tensor input = to_sequence_first(tensor_matrix::as_tensor(x), o_.dim, "x", dtype_);

        torch::Tensor attn_mask, padding;
        if (o_.mask == TorchMask::causal)  // position i may not attend to j > i
            attn_mask = torch::triu(torch::full({n, n}, -std::numeric_limits<double>::infinity(),
                                                torch::TensorOptions().dtype(dtype_)), 1);
        if (o_.mask == TorchMask::key_padding || o_.mask == TorchMask::key_padding_fixed) padding = padding_mask(x);

        torch::Tensor out;
        if (o_.layer == TorchLayer::mha)
            out = std::get<0>(mha_->forward(input, input, input, padding, /*need_weights=*/false, attn_mask));
        else
            out = encoder_->forward(input, attn_mask, padding);
        out = out.to(torch::kFloat64).contiguous();  // (n, 1, dim): its values are the rows of y
        return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            out.data_ptr<double>(), out.size(0), out.size(2));
    }

private:
    // (1, n) booleans, true = padding (ignored as a key). See torch_adapter.h for why the rule is a function of x.
    torch::Tensor padding_mask(const Mat<double>& x) const {
        const auto n = x.rows();
        torch::Tensor m = torch::zeros({1, n}, torch::TensorOptions().dtype(torch::kBool));
        if (o_.mask == TorchMask::key_padding_fixed) {
            if (n > 1) m.accessor<bool, 2>()[0][n - 1] = true;
            return m;
        }
        auto flag = m.accessor<bool, 2>();
        Eigen::Index padded = 0;
        for (Eigen::Index i = 0; i < n; ++i)
            if (x(i, 0) < 0.0) flag[0][i] = true, ++padded;
        if (padded == n) m.fill_(false);
        return m;
    }

    TorchOptions o_;
    torch::Dtype dtype_ = torch::kFloat64;
    torch::nn::MultiheadAttention mha_{nullptr};
    torch::nn::TransformerEncoderLayer encoder_{nullptr};
};

}  // namespace

BlackBox torch_black_box(const TorchOptions& o) {
    auto box = std::make_shared<TorchLayerBox>(o);
    return [box](const Mat<double>& x) { return (*box)(x); };
}

Signature torch_decoder_signature(const TorchOptions& o, int min_len, int max_len) {
    const std::string d = std::to_string(o.dim);
    Signature s;
    s.axes = {{"n", min_len, max_len}, {"m", min_len, max_len}};
    s.inputs = {parse_input("tgt:n," + d), parse_input("memory:m," + d)};
    s.outputs = {parse_output("y:n," + d)};
    return s;
}

NamedBlackBox torch_decoder_black_box(const TorchOptions& o) {
    auto box = std::make_shared<DecoderBox>(o);
    return [box](const Tensors& inputs) { return (*box)(inputs); };
}

}  // namespace permcheck::adapters
