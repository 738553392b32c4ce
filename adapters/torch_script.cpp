#include "adapters/torch_script.h"

#include "adapters/torch_dtype.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace permcheck::adapters {
namespace {

// A LibTorch error's message without its C++ backtrace, on one line; or (last_line) only its last line: for an
// error inside TorchScript, the exception and its message after the tracebacks ("builtins.ValueError: too long",
// "RuntimeError: mat1 and mat2 shapes cannot be multiplied ...").
std::string message_of(const std::exception& e, bool last_line = false) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string m = c10_error ? c10_error->what_without_backtrace() : e.what();
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    if (last_line) return m.substr(m.rfind('\n') + 1);  // npos + 1 is 0: the whole of a one-line message
    std::replace(m.begin(), m.end(), '\n', ' ');
    return m;
}

torch::jit::Module load_module(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw std::invalid_argument(path + " does not exist (the module to audit: a TorchScript file, saved with "
                                           "torch.jit.script(module).save(path))");
    if (std::filesystem::is_directory(path, ec))
        throw std::invalid_argument(path + " is a directory, not a TorchScript file");
    try {
        return torch::jit::load(path);
    } catch (const std::exception& e) {
        throw std::invalid_argument(path + " is not a TorchScript file (torch::jit::load: " + message_of(e) +
                                    "); save one with torch.jit.script(module).save(path)");
    }
}

std::string schema_of(const torch::jit::Method& forward) {
    std::ostringstream s;
    s << forward.function().getSchema();
    return s.str();
}

// Whether an argument is of type Tensor (or Optional[Tensor]).
bool takes_tensor(const c10::Argument& arg) {
    c10::TypePtr type = arg.type();
    if (const auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
    return type->isSubtypeOf(*c10::TensorType::get());
}

// An input goes to an argument of type Tensor (or Optional[Tensor]).
void require_tensor(const std::string& path, const torch::jit::Method& forward, const c10::Argument& arg,
                    const TensorSpec& input) {
    if (takes_tensor(arg)) return;
    throw std::invalid_argument("forward of " + path + " takes " + arg.name() + " as " + arg.type()->str() +
                                ", not a tensor, but --input " + input.name + " goes there (inputs go to forward in "
                                "the order of --input). Its schema: " + schema_of(forward));
}

// forward must take as many arguments as there are inputs (self aside; arguments with defaults may be left out).
void check_arguments(const std::string& path, const torch::jit::Method& forward, const Signature& s) {
    const auto& args = forward.function().getSchema().arguments();
    std::size_t required = 0, total = args.empty() ? 0 : args.size() - 1;
    for (std::size_t k = 1; k < args.size(); ++k)
        if (!args[k].default_value()) ++required;
    const std::size_t given = s.inputs.size();
    if (given >= required && given <= total) {
        for (std::size_t k = 0; k < given; ++k) require_tensor(path, forward, args[k + 1], s.inputs[k]);
        return;
    }
    std::string names;
    for (const TensorSpec& t : s.inputs) names += (names.empty() ? "" : ", ") + t.name;
    std::string m = "forward of " + path + " takes " + std::to_string(total);
    m += total == 1 ? " argument" : " arguments";
    if (required != total) m += " (" + std::to_string(required) + " without a default)";
    m += ", but " + std::to_string(given) + (given == 1 ? " input is" : " inputs are") + " given (" + names;
    m += "): inputs go to forward in the order of --input. Its schema: " + schema_of(forward);
    throw std::invalid_argument(m);
}

// One keyword argument of forward: the input it takes, or (dim >= 0) the length of that input's dim `dim`.
struct Keyword {
    std::string parameter, input;
    int dim = -1;
};

// The keyword of one --argument NAME=SOURCE: SOURCE an input, or length:AXIS (the first input dim of that axis).
Keyword keyword_of(const Signature& s, const std::string& name, const std::string& source) {
    const std::string prefix = "length:";
    if (source.rfind(prefix, 0) == 0) {
        const std::string axis = source.substr(prefix.size());
        for (const TensorSpec& t : s.inputs)
            for (std::size_t k = 0; k < t.dims.size(); ++k)
                if (t.dims[k].axis == axis) return {name, t.name, static_cast<int>(k)};
        throw std::invalid_argument("--argument " + name + "=" + source + ": no input has an axis '" + axis + "'");
    }
    for (const TensorSpec& t : s.inputs)
        if (t.name == source) return {name, source, -1};
    std::string inputs;
    for (const TensorSpec& t : s.inputs) inputs += (inputs.empty() ? "" : ", ") + t.name;
    throw std::invalid_argument("--argument " + name + "=" + source + ": " + source + " is neither an input (" +
                                inputs + ") nor length:AXIS");
}

// forward's keyword arguments (--argument), checked against its schema: each NAME a tensor parameter, named once;
// the inputs no SOURCE names go under their own names, which must be parameters too; every parameter without a
// default is given.
std::vector<Keyword> keywords_of(const TorchScriptOptions& o, const torch::jit::Method& forward) {
    std::vector<Keyword> out;
    std::set<std::string> named_inputs;
    for (const auto& [name, source] : o.arguments) {
        out.push_back(keyword_of(o.signature, name, source));
        if (out.back().dim < 0) named_inputs.insert(source);
    }
    for (const TensorSpec& t : o.signature.inputs)
        if (!named_inputs.count(t.name)) out.push_back({t.name, t.name, -1});
    const auto& args = forward.function().getSchema().arguments();
    std::set<std::string> given;
    for (const Keyword& k : out) {
        const auto arg = std::find_if(args.begin() + (args.empty() ? 0 : 1), args.end(),
                                      [&](const c10::Argument& a) { return a.name() == k.parameter; });
        const std::string what = k.parameter == k.input && k.dim < 0 && !named_inputs.count(k.input)
                                     ? "--input " + k.input + " (named by no --argument, so passed as " + k.input + ")"
                                     : "--argument " + k.parameter;
        if (arg == args.end())
            throw std::invalid_argument(what + ": forward of " + o.path + " has no parameter " + k.parameter +
                                        ". Its schema: " + schema_of(forward));
        if (!given.insert(k.parameter).second)
            throw std::invalid_argument("--argument " + k.parameter + " is given twice");
        if (!takes_tensor(*arg))
            throw std::invalid_argument(what + ": forward of " + o.path + " takes " + k.parameter + " as " +
                                        arg->type()->str() + ", not a tensor. Its schema: " + schema_of(forward));
    }
    for (std::size_t k = 1; k < args.size(); ++k)
        if (!args[k].default_value() && !given.count(args[k].name()))
            throw std::invalid_argument("forward of " + o.path + " needs " + args[k].name() + " (it has no default): "
                                        "give --argument " + args[k].name() + "=INPUT. Its schema: " + schema_of(forward));
    return out;
}

std::optional<c10::ScalarType> floating_dtype(const torch::jit::Module& m) {
    for (const at::Tensor& p : m.parameters())
        if (p.is_floating_point()) return p.scalar_type();
    for (const at::Tensor& b : m.buffers())
        if (b.is_floating_point()) return b.scalar_type();
    return std::nullopt;
}

// The precision of a torch floating dtype, if permcheck audits it.
std::optional<Arithmetic> arithmetic_of(c10::ScalarType t) {
    for (Arithmetic a : {Arithmetic::float32, Arithmetic::float64, Arithmetic::bfloat16, Arithmetic::float16})
        if (scalar_type_of(a) == t) return a;
    return std::nullopt;
}

// The dtype the module computes in: the one asked for (the module converted to it), else its parameters'.
Arithmetic settle_dtype(torch::jit::Module& m, const TorchScriptOptions& o) {
    if (o.dtype) {
        const c10::ScalarType want = scalar_type_of(*o.dtype);
        torch::NoGradGuard no_grad;
        for (at::Tensor t : m.parameters())
            if (t.is_floating_point()) t.set_data(t.to(want));
        for (at::Tensor t : m.buffers())
            if (t.is_floating_point()) t.set_data(t.to(want));
        return *o.dtype;
    }
    const auto found = floating_dtype(m);
    if (!found) return Arithmetic::float32;
    if (const auto a = arithmetic_of(*found)) return *a;
    throw std::invalid_argument(o.path + ": the module's parameters are " + c10::toString(*found) +
                                "; audit-torch computes in float32, float64, bfloat16 or float16 (--dtype converts "
                                "the module)");
}

// How many significant bits a floating dtype keeps (bfloat16 8, float16 11, float32 24, float64 53).
int significand_bits(c10::ScalarType t) {
    switch (t) {
        case torch::kBFloat16: return 8;
        case torch::kHalf: return 11;
        case torch::kFloat32: return 24;
        default: return 53;
    }
}

at::Tensor to_torch(const TensorSpec& spec, const Tensor& t, c10::ScalarType real) {
    const std::vector<std::int64_t> shape(t.shape.begin(), t.shape.end());
    const auto options = torch::TensorOptions().dtype(torch::kFloat64);
    at::Tensor x = t.values.empty() ? torch::zeros(shape, options)
                                    : torch::from_blob(const_cast<double*>(t.values.data()), shape, options).clone();
    switch (spec.kind) {
        case TensorKind::real: return x.to(real);
        case TensorKind::mask: return x.ne(0.0);
        case TensorKind::index:
        case TensorKind::token:
        case TensorKind::position:
        case TensorKind::segment:
        case TensorKind::mask_keep: return x.to(torch::kInt64);
    }
    return x;
}

class ScriptBox {
public:
    ScriptBox(torch::jit::Module m, const TorchScriptOptions& o, Arithmetic dtype, std::vector<Keyword> keywords)
        : module_(std::move(m)), path_(o.path), signature_(o.signature), dtype_(dtype), keywords_(std::move(keywords)),
          output_(o.output) {}

    Tensors operator()(const Tensors& inputs) {
        torch::NoGradGuard no_grad;
        at::set_num_threads(1);
        // The unoptimized graph: the same arithmetic on every call, whatever shapes came before.
        const torch::jit::GraphOptimizerEnabledGuard plain(false);
        const c10::ScalarType real = scalar_type_of(dtype_);
        std::vector<c10::IValue> args;
        torch::jit::Kwargs kwargs;
        if (keywords_.empty())
            for (const TensorSpec& spec : signature_.inputs) args.emplace_back(to_torch(spec, inputs.at(spec.name), real));
        for (const Keyword& k : keywords_) {
            const Tensor& t = inputs.at(k.input);
            kwargs[k.parameter] = k.dim >= 0 ? torch::full({1}, static_cast<std::int64_t>(t.shape[static_cast<std::size_t>(k.dim)]),
                                                           torch::TensorOptions().dtype(torch::kInt64))
                                             : to_torch(spec_of(k.input), t, real);
        }
        c10::IValue out;
        try {
            out = module_.get_method("forward")(std::move(args), kwargs);
        } catch (const std::exception& e) {
            std::string m = "forward of " + path_ + " failed: " + message_of(e, true);
            if (dtype_ == Arithmetic::float16)
                m += " (LibTorch 1.13 has no float16 matrix kernels on CPU: audit with --dtype bfloat16, or a "
                     "float16 layer through an adapter that rounds, permcheck audit --exec)";
            throw LayerRaised(m);  // the module's own: a finding against a reference, else an error
        }
        return outputs_of(selected(out));
    }

private:
    const TensorSpec& spec_of(const std::string& input) const {
        return *std::find_if(signature_.inputs.begin(), signature_.inputs.end(),
                             [&](const TensorSpec& t) { return t.name == input; });
    }
    c10::IValue selected(const c10::IValue& out) const;
    Tensors outputs_of(const c10::IValue& out) const;
    Tensor output_of(const TensorSpec& spec, const c10::IValue& v) const;

    torch::jit::Module module_;
    std::string path_;
    Signature signature_;
    Arithmetic dtype_;
    std::vector<Keyword> keywords_;
    std::string output_;
};

// The element --output-index names: a key of a dict result, or an index of a tuple or list (negative: from the end).
c10::IValue ScriptBox::selected(const c10::IValue& out) const {
    if (output_.empty()) return out;
    const std::string which = "--output-index " + output_ + ": forward of " + path_ + " returned ";
    if (out.isGenericDict()) {
        std::string keys;
        for (const auto& e : out.toGenericDict()) {
            const std::string key = e.key().isString() ? e.key().toStringRef() : e.key().tagKind();
            if (key == output_) return e.value();
            keys += (keys.empty() ? "" : ", ") + key;
        }
        throw AdapterError(which + "a dict without that key (its keys: " + keys + ")");
    }
    if (!out.isTuple() && !out.isList()) throw AdapterError(which + "a " + out.type()->str() + ", not a tuple, list or dict");
    const std::vector<c10::IValue> values = out.isTuple() ? out.toTupleRef().elements().vec() : out.toListRef().vec();
    const auto count = static_cast<long>(values.size());
    std::size_t used = 0;
    long index = 0;
    try {
        index = std::stol(output_, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != output_.size()) throw AdapterError(which + "a tuple or list, which takes an index, not a key");
    if (index < -count || index >= count)
        throw AdapterError(which + std::to_string(count) + (count == 1 ? " value" : " values") + ": no index " + output_);
    return values[static_cast<std::size_t>(index < 0 ? index + count : index)];
}

Tensors ScriptBox::outputs_of(const c10::IValue& out) const {
    std::vector<c10::IValue> values;
    if (out.isTensor()) values.push_back(out);
    else if (out.isTuple()) values = out.toTupleRef().elements().vec();
    else if (out.isList()) values = out.toListRef().vec();
    else
        throw AdapterError("forward of " + path_ + " returned a " + out.type()->str() +
                           "; expected a tensor or a tuple of tensors in the order of --output");
    const std::size_t want = signature_.outputs.size();
    if (values.size() != want) {
        std::string names;
        for (const TensorSpec& t : signature_.outputs) names += (names.empty() ? "" : ", ") + t.name;
        std::string m = "forward of " + path_ + " returned " + std::to_string(values.size());
        m += values.size() == 1 ? " value" : " values";
        m += ", but --output names " + std::to_string(want) + " (" + names + "), read in that order";
        if (output_.empty() && want == 1) m += " (--output-index I answers with its element I)";
        throw AdapterError(m);
    }
    Tensors result;
    for (std::size_t k = 0; k < want; ++k) result[signature_.outputs[k].name] = output_of(signature_.outputs[k], values[k]);
    return result;
}

Tensor ScriptBox::output_of(const TensorSpec& spec, const c10::IValue& v) const {
    const std::string which = "output '" + spec.name + "' of " + path_;
    if (!v.isTensor()) throw AdapterError(which + " is a " + v.type()->str() + ", not a tensor");
    const at::Tensor t = v.toTensor();
    if (!t.is_floating_point())
        throw AdapterError(which + " has dtype " + c10::toString(t.scalar_type()) +
                           "; expected a floating tensor (" + arithmetic_name(dtype_) + " or wider)");
    const c10::ScalarType own = scalar_type_of(dtype_);
    const auto a = arithmetic_of(t.scalar_type());
    if (!a || (t.scalar_type() != own && significand_bits(t.scalar_type()) <= significand_bits(own)))
        throw AdapterError(which + " has dtype " + c10::toString(t.scalar_type()) + " but the module computes in " +
                           arithmetic_name(dtype_) + ": it would be judged with " + arithmetic_name(dtype_) +
                           "'s tolerance (return " + arithmetic_name(dtype_) + " or a wider float, or audit with "
                           "the --dtype it computes in)");
    const at::Tensor d = t.to(torch::kFloat64).contiguous();
    Tensor y;
    y.shape.assign(d.sizes().begin(), d.sizes().end());
    y.values.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    return y;
}

}  // namespace

TorchScriptModule load_torch_script(const TorchScriptOptions& o) {
    torch::jit::Module m = load_module(o.path);
    const auto forward = m.find_method("forward");
    if (!forward) throw std::invalid_argument(o.path + " has no forward method");
    std::vector<Keyword> keywords;
    if (o.arguments.empty()) check_arguments(o.path, *forward, o.signature);
    else keywords = keywords_of(o, *forward);
    TorchScriptModule result;
    result.schema = schema_of(*forward);
    result.dtype = settle_dtype(m, o);
    m.train(o.train);
    torch::manual_seed(o.seed);
    auto box = std::make_shared<ScriptBox>(std::move(m), o, result.dtype, std::move(keywords));
    result.box = [box](const Tensors& inputs) { return (*box)(inputs); };
    return result;
}

}  // namespace permcheck::adapters
