#include "layers/catalog.h"
#include "layers/catalog_parts.h"

#include <stdexcept>

namespace permcheck {

namespace {
using namespace catalog_parts;

std::vector<LayerFamily> make_catalog() {
    // The inner layers of the pooled ones, which are rows of their own too.
    const LayerFamily attn = attention("attention", "single-head scaled dot-product self-attention", {}, {});
    const LayerFamily sinusoidal = attention("attention+sinusoidal", "sinusoidal position signal added, then attention",
                                             {.signal = Signal::sinusoidal}, {.symmetric = false, .absolute = true});
    std::vector<LayerFamily> c;
    add_per_position(c);
    add_attention(c, attn, sinusoidal);
    add_recurrent_and_pooled(c, attn, sinusoidal);
    return c;
}

std::vector<SignatureFamily> make_signature_catalog() {
    std::vector<SignatureFamily> c;
    add_signature_attention(c);
    add_signature_graphs(c);
    return c;
}
}  // namespace

const std::vector<LayerFamily>& catalog() {
    static const std::vector<LayerFamily> c = make_catalog();
    return c;
}

std::string layer_names(const char* separator) {
    std::string out;
    for (const LayerFamily& f : catalog()) out += (out.empty() ? "" : separator) + f.name;
    return out;
}

const LayerFamily& find_layer(const std::string& name) {
    for (const LayerFamily& f : catalog())
        if (f.name == name) return f;
    throw std::invalid_argument("unknown layer '" + name + "'; valid layers: " + layer_names());
}

const std::vector<SignatureFamily>& signature_catalog() {
    static const std::vector<SignatureFamily> c = make_signature_catalog();
    return c;
}

std::string signature_layer_names(const char* separator) {
    std::string out;
    for (const SignatureFamily& f : signature_catalog()) out += (out.empty() ? "" : separator) + f.name;
    return out;
}

const SignatureFamily& find_signature_layer(const std::string& name) {
    for (const SignatureFamily& f : signature_catalog())
        if (f.name == name) return f;
    throw std::invalid_argument("unknown layer '" + name + "'; valid layers over named inputs: " + signature_layer_names());
}

}  // namespace permcheck
